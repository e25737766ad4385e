package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/mirror"
)

// TestReportsCarryUnacknowledgedLosses: records the link lost to source
// retention and no operator acknowledged appear in every report format,
// with their count and ranges.
func TestReportsCarryUnacknowledgedLosses(t *testing.T) {
	r := sample()
	r.RPO.LostRecords = 20
	r.RPO.Losses = []mirror.LostRange{
		{Topic: "orders", Partition: 0, From: 10, To: 24, Records: 15, At: time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)},
		{Topic: "orders", Partition: 1, From: 0, To: 4, Records: 5, At: time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)},
	}
	for _, format := range []string{"markdown", "html", "junit", "json"} {
		var b bytes.Buffer
		if err := Write(&b, r, format); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		for _, want := range []string{"orders/0 offsets 10-24 (15 records)", "orders/1 offsets 0-4"} {
			if !strings.Contains(b.String(), want) && !(format == "json" && strings.Contains(b.String(), `"from": 10`)) {
				t.Errorf("%s report lacks %q", format, want)
			}
		}
	}
	var md bytes.Buffer
	if err := Markdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "20 records in 2 range(s), not acknowledged") {
		t.Errorf("markdown report lacks the count of lost records:\n%s", md.String())
	}
}
