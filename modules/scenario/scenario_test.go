package scenario

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// tomlKeys lists every TOML key of t by section ("" is the top level;
// slices of structs are [[name]] sections, except tiers, an inline array).
func tomlKeys(t reflect.Type, section string, out map[string][]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := strings.Split(f.Tag.Get("toml"), ",")[0]
		if name == "" || name == "-" {
			continue
		}
		ft := f.Type
		switch {
		case ft.Kind() == reflect.Struct:
			sub := name
			if section != "" {
				sub = section + "." + name
			}
			tomlKeys(ft, sub, out)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct && (name == "ramp" || name == "expect" || name == "drill"):
			tomlKeys(ft.Elem(), "["+name+"]", out)
		default:
			out[section] = append(out[section], name)
		}
	}
}

// Every key of the Scenario struct has a table row (key | type | default)
// in its section of docs/scenario.md, so a new key cannot ship undocumented.
func TestScenarioDocDocumentsEveryKey(t *testing.T) {
	b, err := os.ReadFile("../../docs/scenario.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	keys := map[string][]string{}
	tomlKeys(reflect.TypeOf(Scenario{}), "", keys)
	total := 0
	for _, n := range keys {
		total += len(n)
	}
	t.Logf("%d keys in %d sections", total, len(keys))
	if len(keys) < 10 {
		t.Fatalf("found only %d sections: %v", len(keys), keys)
	}
	for section, names := range keys {
		head := "### Top level"
		if section != "" {
			head = "### `[" + section + "]`"
		}
		start := strings.Index(doc, head)
		if start < 0 {
			t.Errorf("docs/scenario.md has no section %q", head)
			continue
		}
		body := doc[start+len(head):]
		if end := strings.Index(body, "\n#"); end >= 0 {
			body = body[:end]
		}
		for _, k := range names {
			row := "| `" + k + "` |"
			i := strings.Index(body, row)
			if i < 0 {
				t.Errorf("%s: no row for key %q", head, k)
				continue
			}
			// key | type | default | …: the default cell is not empty.
			line := body[i:]
			if j := strings.IndexByte(line, '\n'); j >= 0 {
				line = line[:j]
			}
			if cells := strings.Split(line, "|"); len(cells) < 5 || strings.TrimSpace(cells[3]) == "" {
				t.Errorf("%s: key %q has no default cell: %s", head, k, line)
			}
		}
	}
}
