package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/drctl/drctl/drill"
)

// JUnit XML, as CI systems read it: one suite per drill, one test case per
// step, per check (with its figures as properties; a check not measured or
// not applicable is skipped, never passed) and per step of each role change
// the drill ran.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Name    string       `xml:"name,attr"`
	Tests   int          `xml:"tests,attr"`
	Fails   int          `xml:"failures,attr"`
	Skipped int          `xml:"skipped,attr"`
	Time    string       `xml:"time,attr"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string          `xml:"name,attr"`
	Tests     int             `xml:"tests,attr"`
	Fails     int             `xml:"failures,attr"`
	Skipped   int             `xml:"skipped,attr"`
	Time      string          `xml:"time,attr"`
	Timestamp string          `xml:"timestamp,attr"`
	Hostname  string          `xml:"hostname,attr,omitempty"`
	Props     []junitProperty `xml:"properties>property"`
	Cases     []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// junitCase is one test case; Props carry a check's measured figures, so a
// passing case shows what was measured too.
type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Props     *junitProps   `xml:"properties,omitempty"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
}

// junitProps is a case's properties (absent when it has none).
type junitProps struct {
	Props []junitProperty `xml:"property"`
}

func (c *junitCase) prop(name, value string) {
	if c.Props == nil {
		c.Props = &junitProps{}
	}
	c.Props.Props = append(c.Props.Props, junitProperty{name, value})
}

type junitSkipped struct {
	Message string `xml:"message,attr,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// JUnit writes the record as JUnit XML.
func JUnit(w io.Writer, r *drill.Record) error {
	cls := "drctl.drill." + r.Drill
	s := junitSuite{Name: r.ID, Time: secs(r.Duration()), Timestamp: r.StartedAt.UTC().Format("2006-01-02T15:04:05"),
		Props: []junitProperty{{"topology", r.Topology}, {"topology_digest", r.TopologyDigest}, {"kind", r.Kind},
			{"by", r.By}, {"active", r.Active}, {"standby", r.Standby}, {"verdict", string(r.Verdict)}}}
	for _, st := range r.Steps {
		c := junitCase{Name: "step " + st.Name + ": " + st.Title, Classname: cls, Time: secs(time.Duration(st.ElapsedMS) * time.Millisecond)}
		stepOutcome(&c, st)
		s.Cases = append(s.Cases, c)
	}
	for _, ch := range checks(r) {
		c := junitCase{Name: ch.Name, Classname: cls, Time: "0"}
		c.prop("measured", ch.Measured)
		c.prop("objective", ch.Objective)
		c.prop("result", string(ch.Result))
		for _, v := range ch.Values {
			c.prop(v.Name, v.Value)
		}
		switch {
		case !ch.Result.Measured():
			c.Skipped = &junitSkipped{Message: string(ch.Result) + ": " + ch.Measured}
		case !ch.Result.passed():
			msg := fmt.Sprintf("measured %s, objective %s", ch.Measured, ch.Objective)
			c.Failure = &junitFailure{Message: msg, Text: msg}
		}
		s.Cases = append(s.Cases, c)
	}
	for _, d := range r.Directions {
		for _, st := range d.RunSteps {
			c := junitCase{Name: fmt.Sprintf("%s, run %s, step %s: %s", directionTitle(d), d.RunID, st.Name, st.Title), Classname: cls + ".run",
				Time: secs(time.Duration(st.ElapsedMS) * time.Millisecond)}
			stepOutcome(&c, st)
			s.Cases = append(s.Cases, c)
		}
	}
	verdict := junitCase{Name: "verdict", Classname: cls, Time: "0"}
	if !r.Passed() {
		verdict.Failure = &junitFailure{Message: "drill failed", Text: strings.Join(r.Reasons, "\n")}
	}
	s.Cases = append(s.Cases, verdict)
	for _, c := range s.Cases {
		s.Tests++
		if c.Failure != nil {
			s.Fails++
		}
		if c.Skipped != nil {
			s.Skipped++
		}
	}
	doc := junitSuites{Name: "drctl drills", Tests: s.Tests, Fails: s.Fails, Skipped: s.Skipped, Time: s.Time, Suites: []junitSuite{s}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func stepOutcome(c *junitCase, st drill.Step) {
	if st.Summary != "" {
		c.prop("summary", st.Summary)
	}
	switch st.Status {
	case "failed":
		c.Failure = &junitFailure{Message: st.Error, Text: st.Error}
	case "skipped":
		c.Skipped = &junitSkipped{Message: "did not run"}
	}
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
