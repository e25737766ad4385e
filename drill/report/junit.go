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
// step and per judged measurement.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Name    string       `xml:"name,attr"`
	Tests   int          `xml:"tests,attr"`
	Fails   int          `xml:"failures,attr"`
	Time    string       `xml:"time,attr"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string          `xml:"name,attr"`
	Tests     int             `xml:"tests,attr"`
	Fails     int             `xml:"failures,attr"`
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

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *struct{}     `xml:"skipped,omitempty"`
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
		switch st.Status {
		case "failed":
			c.Failure = &junitFailure{Message: st.Error, Text: st.Error}
		case "skipped":
			c.Skipped = &struct{}{}
		}
		s.Cases = append(s.Cases, c)
	}
	for _, ch := range checks(r) {
		c := junitCase{Name: ch.Name, Classname: cls, Time: "0"}
		if !ch.OK {
			msg := fmt.Sprintf("measured %s, objective %s", ch.Measured, ch.Objective)
			c.Failure = &junitFailure{Message: msg, Text: msg}
		}
		s.Cases = append(s.Cases, c)
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
	}
	doc := junitSuites{Name: "drctl drills", Tests: s.Tests, Fails: s.Fails, Time: s.Time, Suites: []junitSuite{s}}
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

func secs(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
