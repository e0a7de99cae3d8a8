package prometheusrw

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// A WriteRequest decoder for the tests: what a receiver sees of a request,
// read field by field from the wire (not through the encoder's types).

type decodedSeries struct {
	labels  map[string]string
	samples [][2]float64 // value, timestamp
	hists   []decodedHist
}

func (d decodedSeries) name() string { return d.labels["__name__"] }

// key is name{k=v,...} with sorted labels other than __name__.
func (d decodedSeries) key() string {
	var ks []string
	for k, v := range d.labels {
		if k != "__name__" {
			ks = append(ks, k+"="+v)
		}
	}
	sort.Strings(ks)
	return d.name() + "{" + strings.Join(ks, ",") + "}"
}

type decodedHist struct {
	count, zero  uint64
	sum, zeroThr float64
	schema       int32
	ts           int64
	pos, neg     map[int32]int64 // absolute bucket counts
}

func fields(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error) error {
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
		var v []byte
		var n uint64
		switch typ {
		case protowire.VarintType:
			n, l = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			n, l = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			v, l = protowire.ConsumeBytes(b)
		default:
			return fmt.Errorf("unexpected wire type %d", typ)
		}
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
		if err := fn(num, typ, v, n); err != nil {
			return err
		}
	}
	return nil
}

func decodeWriteRequest(b []byte) ([]decodedSeries, error) {
	var out []decodedSeries
	err := fields(b, func(num protowire.Number, _ protowire.Type, v []byte, _ uint64) error {
		if num != 1 {
			return fmt.Errorf("WriteRequest field %d", num)
		}
		s := decodedSeries{labels: map[string]string{}}
		var order []string
		err := fields(v, func(num protowire.Number, _ protowire.Type, v []byte, _ uint64) error {
			switch num {
			case 1:
				var name, value string
				if err := fields(v, func(num protowire.Number, _ protowire.Type, v []byte, _ uint64) error {
					if num == 1 {
						name = string(v)
					} else {
						value = string(v)
					}
					return nil
				}); err != nil {
					return err
				}
				s.labels[name] = value
				order = append(order, name)
			case 2:
				var sm [2]float64
				if err := fields(v, func(num protowire.Number, _ protowire.Type, _ []byte, n uint64) error {
					if num == 1 {
						sm[0] = math.Float64frombits(n)
					} else {
						sm[1] = float64(int64(n))
					}
					return nil
				}); err != nil {
					return err
				}
				s.samples = append(s.samples, sm)
			case 4:
				h, err := decodeHist(v)
				if err != nil {
					return err
				}
				s.hists = append(s.hists, h)
			default:
				return fmt.Errorf("TimeSeries field %d", num)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if !sort.StringsAreSorted(order) {
			return fmt.Errorf("labels not sorted: %v", order)
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

func decodeHist(b []byte) (decodedHist, error) {
	h := decodedHist{pos: map[int32]int64{}, neg: map[int32]int64{}}
	var posSpans, negSpans []span
	var posDeltas, negDeltas []int64
	err := fields(b, func(num protowire.Number, _ protowire.Type, v []byte, n uint64) error {
		switch num {
		case 1:
			h.count = n
		case 3:
			h.sum = math.Float64frombits(n)
		case 4:
			h.schema = int32(protowire.DecodeZigZag(n))
		case 5:
			h.zeroThr = math.Float64frombits(n)
		case 6:
			h.zero = n
		case 8, 11:
			var sp span
			if err := fields(v, func(num protowire.Number, _ protowire.Type, _ []byte, n uint64) error {
				if num == 1 {
					sp.offset = int32(protowire.DecodeZigZag(n))
				} else {
					sp.length = uint32(n)
				}
				return nil
			}); err != nil {
				return err
			}
			if num == 8 {
				negSpans = append(negSpans, sp)
			} else {
				posSpans = append(posSpans, sp)
			}
		case 9, 12:
			for len(v) > 0 {
				x, l := protowire.ConsumeVarint(v)
				if l < 0 {
					return protowire.ParseError(l)
				}
				v = v[l:]
				if num == 9 {
					negDeltas = append(negDeltas, protowire.DecodeZigZag(x))
				} else {
					posDeltas = append(posDeltas, protowire.DecodeZigZag(x))
				}
			}
		case 15:
			h.ts = int64(n)
		default:
			return fmt.Errorf("Histogram field %d", num)
		}
		return nil
	})
	if err != nil {
		return h, err
	}
	expand := func(spans []span, deltas []int64, dst map[int32]int64) error {
		var idx int32
		var c int64
		di := 0
		for i, sp := range spans {
			if i == 0 {
				idx = sp.offset
			} else {
				idx += sp.offset
			}
			for range sp.length {
				if di >= len(deltas) {
					return fmt.Errorf("fewer deltas than buckets")
				}
				c += deltas[di]
				di++
				if c < 0 {
					return fmt.Errorf("negative bucket count")
				}
				if c > 0 {
					dst[idx] = c
				}
				idx++
			}
		}
		if di != len(deltas) {
			return fmt.Errorf("%d deltas for %d buckets", len(deltas), di)
		}
		return nil
	}
	if err := expand(posSpans, posDeltas, h.pos); err != nil {
		return h, err
	}
	return h, expand(negSpans, negDeltas, h.neg)
}
