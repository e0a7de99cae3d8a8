package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/buzzload/buzzload/modules/report/htmlreport"
)

// A report is written to a temporary file and renamed into place, never
// over the previous one in place: a failed write (a full disk) leaves the
// previous report whole (issue 43 L1). A hard link to the previous file
// still reads the previous content after the write (an in-place write
// would change it too).
func TestReportFilesReplaceNotOverwrite(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	if err := os.WriteFile(page, []byte("previous"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "old.html")
	if err := os.Link(page, old); err != nil {
		t.Fatal(err)
	}
	if err := writeHTML(page, htmlPage("t", htmlreport.Run{Label: "A", File: "a.json"})); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(old); string(b) != "previous" {
		t.Errorf("the previous report was overwritten in place (%d bytes)", len(b))
	}
	if b, _ := os.ReadFile(page); len(b) < 100 {
		t.Errorf("the new report is %d bytes", len(b))
	}
}
