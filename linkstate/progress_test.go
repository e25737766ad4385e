package linkstate

import (
	"testing"
)

// TestProgressMetadataRoundTrip: a checkpoint's metadata decodes to the
// progress it encodes, and metadata that names no place in the offset map
// (malformed, foreign) is read as none.
func TestProgressMetadataRoundTrip(t *testing.T) {
	for _, c := range []struct {
		pe   Progress
		want string
	}{
		{Progress{MapPos: -1}, ""},
		{Progress{LastTs: 1700000000000, MapPos: -1}, "ts=1700000000000"},
		{Progress{MapPart: 3, MapPos: 0}, "map=3@0"},
		{Progress{LastTs: 1700000000000, MapPart: 7, MapPos: 123456}, "ts=1700000000000 map=7@123456"},
		{Progress{LastTs: 1700000000000, MapPart: 7, MapPos: 9, TopicID: "AAAAAAAAAAAAAAAAAAAAAQ"}, "ts=1700000000000 map=7@9 id=AAAAAAAAAAAAAAAAAAAAAQ"},
		{Progress{MapPos: -1, TopicID: "x"}, "id=x"},
	} {
		c.pe.Next = 42
		got := ""
		if md := c.pe.Metadata(); md != nil {
			got = *md
		}
		if got != c.want {
			t.Errorf("metadata of %+v = %q, want %q", c.pe, got, c.want)
		}
		back := ParseProgress(42, got)
		if back.MapPos < 0 {
			back.MapPart = c.pe.MapPart // no place: its partition means nothing
		}
		if back != c.pe {
			t.Errorf("parse(%q) = %+v, want %+v", got, back, c.pe)
		}
	}
	// Malformed or foreign metadata is no place in the map.
	for _, md := range []string{"map=", "map=x@1", "map=1@", "map=-1@5", "map=1@-5", "map=1", "ts=abc", "garbage"} {
		if pe := ParseProgress(1, md); pe.MapPos != -1 {
			t.Errorf("parse(%q): place %d, want none", md, pe.MapPos)
		}
	}
}
