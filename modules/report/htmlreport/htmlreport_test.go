package htmlreport

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// A report's text cannot end the data block early: an op name or error text
// holding "</script>" stays inside the JSON.
func TestWriteEscapesTheData(t *testing.T) {
	rep := json.RawMessage(`{"run_id":"x</script><script>alert(1)</script>","steps":[]}`)
	var b bytes.Buffer
	if err := Write(&b, Page{Title: "t <b>", Runs: []Run{{Label: "A", Report: rep}}}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if n := strings.Count(out, "</script>"); n != 2 { // the data block's and the script's
		t.Fatalf("%d </script> in the page", n)
	}
	if !strings.Contains(out, "<title>t &lt;b&gt;</title>") {
		t.Fatal("title not escaped")
	}
	if err := Write(&b, Page{}); err == nil {
		t.Fatal("a page with no run written")
	}
}
