package plan

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
)

// WriteText prints one result, or several side by side (legacy and current)
// with the last over the first as a ratio.
func WriteText(w io.Writer, rs ...*Result) {
	if len(rs) == 0 {
		return
	}
	r0 := rs[0]
	fmt.Fprintf(w, "buzzload plan %s: %s simulated, clients %s\n", r0.RunID, r0.Duration, clientText(r0.Clients))
	fmt.Fprintln(w, "  what the relay would see (mean per second over the run, and in its busiest minute)")
	modes := make([]string, len(rs))
	for i, r := range rs {
		if len(rs) > 1 {
			modes[i] = "desktop " + r.Mode + " "
		}
	}
	section := func(title string, get func(*Result) []Rate) {
		fmt.Fprintf(w, "\n  %s\n", title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		head := "\t"
		for _, m := range modes {
			head += m + "/s\tpeak /s\ttotal\t"
		}
		if len(rs) > 1 {
			head += "B/A\t"
		}
		fmt.Fprintln(tw, head)
		names := map[string]bool{}
		for _, r := range rs {
			for _, x := range get(r) {
				names[x.Name] = true
			}
		}
		var keys []string
		for n := range names {
			keys = append(keys, n)
		}
		sort.Strings(keys)
		for _, n := range keys {
			line := "    " + n + "\t"
			var first, last float64
			for i, r := range rs {
				x := find(get(r), n)
				line += fmt.Sprintf("%s\t%s\t%s\t", num(x.PerSec), num(x.PeakMinutePerSec), num(x.Count))
				if i == 0 {
					first = x.Count
				}
				last = x.Count
			}
			if len(rs) > 1 {
				if first > 0 {
					line += fmt.Sprintf("%.2f\t", last/first)
				} else {
					line += "-\t"
				}
			}
			fmt.Fprintln(tw, line)
		}
		tw.Flush()
	}
	section("operations (as a run's report names them)", func(r *Result) []Rate { return r.Ops })
	section("endpoints", func(r *Result) []Rate { return r.Endpoints })
	section("accepted events by kind", func(r *Result) []Rate { return r.Kinds })
	section("connects by cause", func(r *Result) []Rate { return r.Connects })
	section("bytes", func(r *Result) []Rate { return r.Bytes })

	fmt.Fprintln(w, "\n  levels")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "\t"
	for _, m := range modes {
		head += m + "mean\tpeak\t"
	}
	fmt.Fprintln(tw, head)
	level := func(name string, get func(*Result) Level) {
		line := "    " + name + "\t"
		for _, r := range rs {
			l := get(r)
			line += num(l.Mean) + "\t" + num(l.Peak) + "\t"
		}
		fmt.Fprintln(tw, line)
	}
	level("open connections", func(r *Result) Level { return r.Connections })
	level("open subscriptions", func(r *Result) Level { return r.Subscriptions })
	level("#h channels per REQ (mean, max)", func(r *Result) Level { return r.HPerREQ })
	tw.Flush()

	for _, r := range rs {
		fmt.Fprintf(w, "\n  fan-out (desktop %s): %s deliveries/s (peak minute %s/s)\n", r.Mode, num(r.Deliveries.PerSec), num(r.Deliveries.PeakMinutePerSec))
		for _, c := range r.Communities {
			fmt.Fprintf(w, "    community %d: %s messages/s, %s deliveries/s, %s deliveries per message\n",
				c.Community, num(c.Events.PerSec), num(c.Deliveries.PerSec), num(c.FanOut))
		}
		l := r.Largest
		fmt.Fprintf(w, "    largest channel (community %d, channel %d, %d members): %s messages/s, %s deliveries/s (peak minute %s/s)\n",
			l.Community, l.Channel, l.Members, num(l.Events.PerSec), num(l.Deliveries.PerSec), num(l.Deliveries.PeakMinutePerSec))
	}
	fmt.Fprintln(w, "\n  not modelled: latency feedback from a slow relay, throttling (every quota is unlimited), reconnect storms after relay failures, silence probes (sockets are busy)")
}

func find(rs []Rate, name string) Rate {
	for _, r := range rs {
		if r.Name == name {
			return r
		}
	}
	return Rate{Name: name}
}

func clientText(c map[string]int) string {
	var parts []string
	for k, n := range c {
		parts = append(parts, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// num prints a count or rate with the precision it deserves.
func num(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return fmt.Sprintf("%.0f", v)
	case v >= 1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}
