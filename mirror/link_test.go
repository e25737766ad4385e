package mirror

import (
	"testing"

	"github.com/drctl/drctl/offsettranslate"
)

// The offset map's topic has one name, whichever package derives it.
func TestLinkOffsetsTopicIsTheMapsTopic(t *testing.T) {
	l := Link{Topology: "payments", Source: "east", Target: "west"}
	if got, want := l.OffsetsTopic(), offsettranslate.TopicName("payments", "east", "west"); got != want {
		t.Fatalf("Link.OffsetsTopic() = %q, offsettranslate.TopicName = %q", got, want)
	}
}
