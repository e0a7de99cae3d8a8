// Package relaymetrics reads a relay's own Prometheus series during a run
// (issue 45): at the start, periodically and at the end, from a URL or
// from pods through kubectl (read-only). What the relay says it did is
// put beside what the clients saw (the report's relay_metrics and its
// checks). Only Buzz's series (buzz_*) are kept: a relay's process and
// runtime series say nothing a load test judges.
package relaymetrics

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// KubectlPrefix marks a source read through kubectl:
// kubectl:NAMESPACE/SELECTOR:PORT.
const KubectlPrefix = "kubectl:"

// Prefix is what a kept series' name starts with.
const Prefix = "buzz_"

// maxSeries bounds what one scrape keeps (a relay with unbounded labels
// cannot grow the report without bound).
const maxSeries = 2000

// Source is one place the relay's series are read from.
type Source struct {
	Spec string // as given (its name in the report)
	URL  string
	// Kubectl: every pod the selector matches, through the API server's
	// pod proxy (kubectl get --raw), summed.
	Namespace, Selector, Port string
}

// ParseSource reads an http(s) URL or kubectl:NAMESPACE/SELECTOR:PORT.
func ParseSource(spec string) (Source, error) {
	if rest, ok := strings.CutPrefix(spec, KubectlPrefix); ok {
		ns, selPort, ok := strings.Cut(rest, "/")
		i := strings.LastIndex(selPort, ":")
		if !ok || ns == "" || i <= 0 || i == len(selPort)-1 {
			return Source{}, fmt.Errorf("%q: want %sNAMESPACE/SELECTOR:PORT, e.g. kubectl:buzz/app=buzz-relay:9102", spec, KubectlPrefix)
		}
		return Source{Spec: spec, Namespace: ns, Selector: selPort[:i], Port: selPort[i+1:]}, nil
	}
	if !strings.HasPrefix(spec, "http://") && !strings.HasPrefix(spec, "https://") {
		return Source{}, fmt.Errorf("%q: want an http:// or https:// URL of the relay's /metrics, or %sNAMESPACE/SELECTOR:PORT", spec, KubectlPrefix)
	}
	return Source{Spec: spec, URL: spec}, nil
}

// Series is one kept series: its family, labels and type.
type Series struct {
	Name   string
	Labels map[string]string
	Type   string // counter or gauge (a histogram's _count and _sum are counters)
}

// Scrape is one reading of a source: series key → value.
type Scrape struct {
	At     time.Time
	Values map[string]float64
	Series map[string]Series
}

// Parse reads Prometheus's text format, keeping Buzz's series.
func Parse(r io.Reader, at time.Time) (Scrape, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return Scrape{}, fmt.Errorf("not Prometheus text: %w", err)
	}
	s := Scrape{At: at, Values: map[string]float64{}, Series: map[string]Series{}}
	names := make([]string, 0, len(fams))
	for name := range fams {
		if strings.HasPrefix(name, Prefix) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		for _, m := range fams[name].Metric {
			if len(s.Values) >= maxSeries {
				return s, nil
			}
			labels := map[string]string{}
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			switch fams[name].GetType() {
			case dto.MetricType_COUNTER:
				s.put(name, labels, "counter", m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				s.put(name, labels, "gauge", m.GetGauge().GetValue())
			case dto.MetricType_UNTYPED:
				s.put(name, labels, "gauge", m.GetUntyped().GetValue())
			case dto.MetricType_HISTOGRAM:
				s.put(name+"_count", labels, "counter", float64(m.GetHistogram().GetSampleCount()))
				s.put(name+"_sum", labels, "counter", m.GetHistogram().GetSampleSum())
			case dto.MetricType_SUMMARY:
				s.put(name+"_count", labels, "counter", float64(m.GetSummary().GetSampleCount()))
				s.put(name+"_sum", labels, "counter", m.GetSummary().GetSampleSum())
			}
		}
	}
	return s, nil
}

// Key is a series' identity: name{a="x",b="y"} with sorted labels.
func Key(name string, labels map[string]string) string {
	if len(labels) == 0 {
		return name
	}
	ks := make([]string, 0, len(labels))
	for k := range labels {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, k := range ks {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", k, labels[k])
	}
	b.WriteByte('}')
	return b.String()
}

func (s *Scrape) put(name string, labels map[string]string, typ string, v float64) {
	k := Key(name, labels)
	s.Values[k] += v // pods of one relay add up
	if _, ok := s.Series[k]; !ok {
		s.Series[k] = Series{Name: name, Labels: labels, Type: typ}
	}
}

// add merges another reading (another pod of the same relay) into s.
func (s *Scrape) add(o Scrape) {
	for k, v := range o.Values {
		if _, ok := s.Series[k]; !ok && len(s.Values) >= maxSeries {
			continue
		}
		s.Values[k] += v
		if _, ok := s.Series[k]; !ok {
			s.Series[k] = o.Series[k]
		}
	}
}

// Reader reads sources.
type Reader struct {
	Client  *http.Client // nil: a client with a 10 s timeout
	Kubectl string       // "" = kubectl on PATH
}

// Read scrapes one source.
func (rd Reader) Read(ctx context.Context, src Source) (Scrape, error) {
	if src.URL != "" {
		return rd.readURL(ctx, src.URL)
	}
	return rd.readPods(ctx, src)
}

func (rd Reader) readURL(ctx context.Context, url string) (Scrape, error) {
	client := rd.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Scrape{}, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := client.Do(req)
	if err != nil {
		return Scrape{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Scrape{}, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return Parse(io.LimitReader(resp.Body, 32<<20), time.Now())
}

// readPods reads every pod the selector matches through the API
// server's pod proxy and sums them (one relay, several replicas).
func (rd Reader) readPods(ctx context.Context, src Source) (Scrape, error) {
	out, err := rd.kubectl(ctx, "get", "pods", "-n", src.Namespace, "-l", src.Selector,
		"--field-selector=status.phase=Running", "-o", "jsonpath={range .items[*]}{.metadata.name}{\"\\n\"}{end}")
	if err != nil {
		return Scrape{}, err
	}
	pods := strings.Fields(string(out))
	if len(pods) == 0 {
		return Scrape{}, fmt.Errorf("no running pod in %s matches %s", src.Namespace, src.Selector)
	}
	sum := Scrape{At: time.Now(), Values: map[string]float64{}, Series: map[string]Series{}}
	for _, pod := range pods {
		body, err := rd.kubectl(ctx, "get", "--raw", "/api/v1/namespaces/"+src.Namespace+"/pods/"+pod+":"+src.Port+"/proxy/metrics")
		if err != nil {
			return Scrape{}, fmt.Errorf("pod %s: %w", pod, err)
		}
		s, err := Parse(bytes.NewReader(body), sum.At)
		if err != nil {
			return Scrape{}, fmt.Errorf("pod %s: %w", pod, err)
		}
		sum.add(s)
	}
	return sum, nil
}

func (rd Reader) kubectl(ctx context.Context, args ...string) ([]byte, error) {
	bin := rd.Kubectl
	if bin == "" {
		bin = "kubectl"
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl %s: %v: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
