package nostr

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// kindConstants reads kinds.go's constants by parsing the file, so a kind
// added later is covered without editing this test.
func kindConstants(t *testing.T) map[string]int {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "kinds.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					t.Fatalf("%s: not a literal", n.Name)
				}
				v, err := strconv.Atoi(lit.Value)
				if err != nil {
					t.Fatalf("%s: %v", n.Name, err)
				}
				out[n.Name] = v
			}
		}
	}
	return out
}

func TestKindConstantsDistinctAndInRange(t *testing.T) {
	ks := kindConstants(t)
	if len(ks) < 50 {
		t.Fatalf("parsed only %d kind constants", len(ks))
	}
	seen := map[int]string{}
	for name, v := range ks {
		if !strings.HasPrefix(name, "Kind") {
			t.Errorf("%s: kind constants are named Kind*", name)
		}
		if v < 0 || v > 65535 {
			t.Errorf("%s = %d is outside 0..65535", name, v)
		}
		if prev, dup := seen[v]; dup {
			t.Errorf("%s and %s are both %d", name, prev, v)
		}
		seen[v] = name
		// The range comments in kinds.go must agree with the range helpers.
		if strings.Contains(name, "Presence") && name != "KindPresenceSnapshot" && !IsEphemeral(v) {
			t.Errorf("%s = %d should be ephemeral", name, v)
		}
	}
	for _, k := range []int{KindTyping, KindClientAuth, KindObserverFrame, KindHTTPAuth} {
		if !IsEphemeral(k) || IsAddressable(k) {
			t.Errorf("kind %d: ephemeral %v addressable %v", k, IsEphemeral(k), IsAddressable(k))
		}
	}
	for _, k := range []int{KindReadState, KindReminder, KindGroupMembers, KindProject} {
		if !IsAddressable(k) || IsEphemeral(k) {
			t.Errorf("kind %d: should be addressable only", k)
		}
	}
	if IsEphemeral(KindStreamMessage) || IsAddressable(KindStreamMessage) || IsEphemeral(19999) || IsAddressable(40000) {
		t.Error("range bounds")
	}
}
