package output

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/engine/output/pump"
)

// CSVConfig is the CSV output's settings.
type CSVConfig struct {
	FileName     string
	SaveInterval time.Duration
	// TimeFormat is unix (default), unix_milli, unix_micro, unix_nano,
	// rfc3339 or rfc3339_nano.
	TimeFormat string
}

var csvTimeFormats = map[string]bool{"unix": true, "unix_milli": true, "unix_micro": true, "unix_nano": true, "rfc3339": true, "rfc3339_nano": true}

// ParseCSVConfig reads `FILE` or `fileName=…,saveInterval=…,timeFormat=…`
// over the K6_CSV_FILENAME, K6_CSV_SAVE_INTERVAL and K6_CSV_TIME_FORMAT
// environment values (the argument wins). Defaults: file.csv, 1s, unix.
func ParseCSVConfig(arg string, env map[string]string) (CSVConfig, error) {
	cfg := CSVConfig{FileName: "file.csv", SaveInterval: time.Second, TimeFormat: "unix"}
	set := func(key, val, from string) error {
		switch key {
		case "fileName":
			cfg.FileName = val
		case "saveInterval":
			d, err := time.ParseDuration(val)
			if err != nil || d <= 0 {
				return fmt.Errorf("%s: saveInterval %q is not a positive duration", from, val)
			}
			cfg.SaveInterval = d
		case "timeFormat":
			if !csvTimeFormats[val] {
				return fmt.Errorf("%s: timeFormat %q is not one of unix, unix_milli, unix_micro, unix_nano, rfc3339, rfc3339_nano", from, val)
			}
			cfg.TimeFormat = val
		default:
			return fmt.Errorf("%s: unknown csv option %q", from, key)
		}
		return nil
	}
	for envKey, key := range map[string]string{"K6_CSV_FILENAME": "fileName", "K6_CSV_SAVE_INTERVAL": "saveInterval", "K6_CSV_TIME_FORMAT": "timeFormat"} {
		if v, ok := env[envKey]; ok {
			if err := set(key, v, envKey); err != nil {
				return CSVConfig{}, err
			}
		}
	}
	if arg == "" {
		return cfg, nil
	}
	if !strings.Contains(arg, "=") {
		cfg.FileName = arg
		return cfg, nil
	}
	for _, part := range strings.Split(arg, ",") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return CSVConfig{}, fmt.Errorf("csv option %q: want key=value", part)
		}
		if err := set(k, v, "csv argument"); err != nil {
			return CSVConfig{}, err
		}
	}
	return cfg, nil
}

// CSV writes k6's CSV rows (spec §7.2).
type CSV struct {
	cfg     CSVConfig
	p       Params
	columns []string // system tag columns, sorted
	isCol   map[string]bool
	out     *sink
	bw      *bufio.Writer
	cw      *csv.Writer
	pump    pump.Pump
	row     []string
}

var _ Output = (*CSV)(nil)

// NewCSV creates a CSV output.
func NewCSV(cfg CSVConfig, p Params) *CSV {
	tags := p.SystemTags
	if tags == nil {
		tags = metrics.DefaultSystemTags()
	}
	c := &CSV{cfg: cfg, p: p, isCol: map[string]bool{}}
	for _, t := range tags {
		if t == "vu" || t == "iter" || c.isCol[t] {
			continue // metadata, never columns
		}
		c.isCol[t] = true
		c.columns = append(c.columns, t)
	}
	sort.Strings(c.columns)
	c.pump = pump.Pump{Interval: cfg.SaveInterval, Write: c.write}
	return c
}

// Header is the header row.
func (c *CSV) Header() []string {
	h := []string{"metric_name", "timestamp", "metric_value"}
	h = append(h, c.columns...)
	return append(h, "extra_tags", "metadata")
}

// Start opens the file and writes the header.
func (c *CSV) Start() error {
	s, err := openSink(c.cfg.FileName, c.p.Stdout)
	if err != nil {
		return err
	}
	c.out = s
	c.bw = bufio.NewWriterSize(s.w, 64<<10)
	c.cw = csv.NewWriter(c.bw)
	if err := c.cw.Write(c.Header()); err != nil {
		return fmt.Errorf("csv output %s: %w", c.cfg.FileName, err)
	}
	c.pump.Start()
	return nil
}

// AddSamples copies samples for the next write.
func (c *CSV) AddSamples(s []metrics.Sample) { c.pump.Add(s) }

// Stop writes the rest and closes the file.
func (c *CSV) Stop() error {
	err := c.pump.Halt()
	if c.out == nil {
		return err
	}
	c.cw.Flush()
	if ferr := c.cw.Error(); err == nil {
		err = ferr
	}
	if ferr := c.bw.Flush(); err == nil {
		err = ferr
	}
	if cerr := c.out.Close(); err == nil {
		err = cerr
	}
	c.out = nil
	return err
}

func (c *CSV) timestamp(t time.Time) string {
	switch c.cfg.TimeFormat {
	case "unix_milli":
		return strconv.FormatInt(t.UnixMilli(), 10)
	case "unix_micro":
		return strconv.FormatInt(t.UnixMicro(), 10)
	case "unix_nano":
		return strconv.FormatInt(t.UnixNano(), 10)
	case "rfc3339":
		return t.Format(time.RFC3339)
	case "rfc3339_nano":
		return t.Format(time.RFC3339Nano)
	}
	return strconv.FormatInt(t.Unix(), 10)
}

// Row formats one sample: system tags in their columns, other tags as
// `k=v&k2=v2` in extra_tags (sorted, where k6 uses map order), metadata the
// same way.
func (c *CSV) Row(s *metrics.Sample) []string {
	row := c.row[:0]
	row = append(row, s.Metric.Name, c.timestamp(s.Time), strconv.FormatFloat(s.Value, 'f', 6, 64))
	base := len(row)
	for range c.columns {
		row = append(row, "")
	}
	var extra []string
	for _, t := range s.Tags.Tags() {
		if c.isCol[t.Key] {
			i := sort.SearchStrings(c.columns, t.Key)
			row[base+i] = t.Value
			continue
		}
		extra = append(extra, t.Key+"="+t.Value)
	}
	var meta []string
	for _, t := range s.Metadata.Tags() {
		meta = append(meta, t.Key+"="+t.Value)
	}
	row = append(row, strings.Join(extra, "&"), strings.Join(meta, "&"))
	c.row = row
	return row
}

func (c *CSV) write(batch []metrics.Sample) error {
	for i := range batch {
		if batch[i].Metric == nil {
			continue
		}
		if err := c.cw.Write(c.Row(&batch[i])); err != nil {
			return fmt.Errorf("csv output %s: %w", c.cfg.FileName, err)
		}
	}
	c.cw.Flush()
	if err := c.cw.Error(); err != nil {
		return fmt.Errorf("csv output %s: %w", c.cfg.FileName, err)
	}
	return c.bw.Flush()
}
