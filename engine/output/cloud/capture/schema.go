package capture

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	_ "google.golang.org/protobuf/types/known/timestamppb" // registers google/protobuf/timestamp.proto
)

// The metrics protocol 2.0 schema as a descriptor, so that the protobuf
// library's dynamic messages decode what arrives: a decoder independent of
// the output's hand-written encoder (engine/output/cloud/wire.go), which
// also reads real k6's pushes. Field numbers from k6 v1.8.1's metric.proto
// (package metrics).

type field struct {
	name     string
	num      int32
	typ      descriptorpb.FieldDescriptorProto_Type
	repeated bool
	msg      string // type name for messages and enums
	oneof    *int32
	optional bool
}

func msgType(name string, fields ...field) *descriptorpb.DescriptorProto {
	d := &descriptorpb.DescriptorProto{Name: proto.String(name)}
	for _, f := range fields {
		fd := &descriptorpb.FieldDescriptorProto{
			Name: proto.String(f.name), Number: proto.Int32(f.num), Type: f.typ.Enum(),
			Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), JsonName: proto.String(jsonName(f.name)),
		}
		if f.repeated {
			fd.Label = descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
		}
		if f.msg != "" {
			fd.TypeName = proto.String(f.msg)
		}
		if f.oneof != nil {
			fd.OneofIndex = f.oneof
		}
		if f.optional {
			fd.Proto3Optional = proto.Bool(true)
			d.OneofDecl = append(d.OneofDecl, &descriptorpb.OneofDescriptorProto{Name: proto.String("_" + f.name)})
			fd.OneofIndex = proto.Int32(int32(len(d.OneofDecl) - 1)) //nolint:gosec // a handful
		}
		d.Field = append(d.Field, fd)
	}
	return d
}

func jsonName(s string) string {
	out := []byte{}
	up := false
	for i := 0; i < len(s); i++ {
		if s[i] == '_' {
			up = true
			continue
		}
		c := s[i]
		if up && c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		up = false
		out = append(out, c)
	}
	return string(out)
}

const (
	tDouble = descriptorpb.FieldDescriptorProto_TYPE_DOUBLE
	tString = descriptorpb.FieldDescriptorProto_TYPE_STRING
	tUint32 = descriptorpb.FieldDescriptorProto_TYPE_UINT32
	tMsg    = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE
	tEnum   = descriptorpb.FieldDescriptorProto_TYPE_ENUM
)

func schema() (protoreflect.MessageDescriptor, error) {
	ts := ".google.protobuf.Timestamp"
	zero := int32(0)
	values := func(name, value string) *descriptorpb.DescriptorProto {
		return msgType(name, field{name: "values", num: 1, typ: tMsg, repeated: true, msg: ".metrics." + value})
	}
	samplesOneof := &descriptorpb.OneofDescriptorProto{Name: proto.String("samples")}
	timeSeries := msgType("TimeSeries",
		field{name: "labels", num: 1, typ: tMsg, repeated: true, msg: ".metrics.Label"},
		field{name: "counter_samples", num: 2, typ: tMsg, msg: ".metrics.CounterSamples", oneof: &zero},
		field{name: "gauge_samples", num: 3, typ: tMsg, msg: ".metrics.GaugeSamples", oneof: &zero},
		field{name: "rate_samples", num: 4, typ: tMsg, msg: ".metrics.RateSamples", oneof: &zero},
		field{name: "trend_hdr_samples", num: 5, typ: tMsg, msg: ".metrics.TrendHdrSamples", oneof: &zero})
	timeSeries.OneofDecl = []*descriptorpb.OneofDescriptorProto{samplesOneof}
	fd := &descriptorpb.FileDescriptorProto{
		Name: proto.String("buzzload/cloud/metric.proto"), Package: proto.String("metrics"), Syntax: proto.String("proto3"),
		Dependency: []string{"google/protobuf/timestamp.proto"},
		EnumType: []*descriptorpb.EnumDescriptorProto{{Name: proto.String("MetricType"), Value: []*descriptorpb.EnumValueDescriptorProto{
			{Name: proto.String("METRIC_TYPE_UNSPECIFIED"), Number: proto.Int32(0)},
			{Name: proto.String("METRIC_TYPE_COUNTER"), Number: proto.Int32(1)},
			{Name: proto.String("METRIC_TYPE_GAUGE"), Number: proto.Int32(2)},
			{Name: proto.String("METRIC_TYPE_RATE"), Number: proto.Int32(3)},
			{Name: proto.String("METRIC_TYPE_TREND"), Number: proto.Int32(4)},
		}}},
		MessageType: []*descriptorpb.DescriptorProto{
			msgType("MetricSet",
				field{name: "test_run_id", num: 1, typ: tString},
				field{name: "aggregation_period", num: 2, typ: tUint32},
				field{name: "metrics", num: 3, typ: tMsg, repeated: true, msg: ".metrics.Metric"}),
			msgType("Metric",
				field{name: "name", num: 1, typ: tString},
				field{name: "type", num: 2, typ: tEnum, msg: ".metrics.MetricType"},
				field{name: "time_series", num: 3, typ: tMsg, repeated: true, msg: ".metrics.TimeSeries"}),
			msgType("Label", field{name: "name", num: 1, typ: tString}, field{name: "value", num: 2, typ: tString}),
			timeSeries,
			values("CounterSamples", "CounterValue"),
			values("GaugeSamples", "GaugeValue"),
			values("RateSamples", "RateValue"),
			values("TrendHdrSamples", "TrendHdrValue"),
			msgType("CounterValue", field{name: "time", num: 1, typ: tMsg, msg: ts}, field{name: "value", num: 2, typ: tDouble}),
			msgType("GaugeValue", field{name: "time", num: 1, typ: tMsg, msg: ts},
				field{name: "last", num: 2, typ: tDouble}, field{name: "count", num: 3, typ: tUint32},
				field{name: "min", num: 4, typ: tDouble}, field{name: "max", num: 5, typ: tDouble}, field{name: "avg", num: 6, typ: tDouble}),
			msgType("RateValue", field{name: "time", num: 1, typ: tMsg, msg: ts},
				field{name: "nonzero_count", num: 2, typ: tUint32}, field{name: "total_count", num: 3, typ: tUint32}),
			msgType("BucketSpan", field{name: "offset", num: 1, typ: tUint32}, field{name: "length", num: 2, typ: tUint32}),
			msgType("TrendHdrValue", field{name: "time", num: 1, typ: tMsg, msg: ts},
				field{name: "counters", num: 2, typ: tUint32, repeated: true},
				field{name: "spans", num: 3, typ: tMsg, repeated: true, msg: ".metrics.BucketSpan"},
				field{name: "sum", num: 5, typ: tDouble}, field{name: "count", num: 6, typ: tUint32},
				field{name: "min_value", num: 7, typ: tDouble}, field{name: "max_value", num: 8, typ: tDouble},
				field{name: "extra_low_values_counter", num: 9, typ: tUint32, optional: true},
				field{name: "extra_high_values_counter", num: 10, typ: tUint32, optional: true},
				field{name: "min_resolution", num: 11, typ: tDouble},
				field{name: "significant_digits", num: 12, typ: tUint32, optional: true}),
		},
	}
	f, err := protodesc.NewFile(fd, protoregistry.GlobalFiles)
	if err != nil {
		return nil, err
	}
	return f.Messages().ByName("MetricSet"), nil
}
