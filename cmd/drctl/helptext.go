package main

import (
	"reflect"
	"strings"

	"github.com/urfave/cli/v2"
)

// helpText is the long help of a command: a paragraph (the command's
// Description, when its definition has none) and examples that run as shown
// against the sandbox's drctl.yaml.
type helpText struct {
	description string
	examples    []string
}

// helpTexts holds the long help of the commands whose definitions carry
// none, by command path. A command that sets its own Description includes
// its examples there, after a line "Examples:".
var helpTexts = map[string]helpText{
	"validate": {examples: []string{"drctl validate", "drctl validate --online", "drctl -c prod.yaml validate -o json"}},
	"status":   {examples: []string{"drctl status", "drctl status -o json | jq .roles", "drctl status --timeout 5s"}},
	"mirror": {description: "mirror runs the replication daemon (mirror run), measures how far the standby is behind (mirror lag),\n" +
		"resolves a topic recreated on the active (mirror reseed-topic) and changes the link's shard count (mirror reshard).",
		examples: []string{"drctl mirror run", "drctl mirror lag"}},
	"mirror run":          {examples: []string{"drctl mirror run", "drctl mirror run --listen 127.0.0.1:9465 --log-format json --log-level debug"}},
	"mirror reshard":      {examples: []string{"drctl mirror reshard --shards 2", "drctl mirror reshard --shards 16 --yes"}},
	"mirror ack-lost":     {examples: []string{"drctl mirror ack-lost orders/3", "drctl mirror ack-lost --yes -o json"}},
	"mirror reseed-topic": {examples: []string{"drctl mirror reseed-topic orders --salvage", "drctl mirror reseed-topic orders --drop --yes"}},
	"mirror lag": {description: "lag measures the live link (the live active to the live standby) per partition: the source's end\n" +
		"offset, the position the mirror has copied to, the records and seconds it is behind, and the records lost\n" +
		"to the source's retention before they were copied (while pending; every recorded loss not yet acknowledged\n" +
		"is listed below the table, see drctl mirror ack-lost). It changes nothing; exit 3 when a cluster is unreachable.",
		examples: []string{"drctl mirror lag", "drctl mirror lag -o json"}},
	"offsets": {description: "offsets translates consumer-group positions from the live active to the live standby through the\n" +
		"mirror's exact offset map (translate) and commits them on the standby (sync).",
		examples: []string{"drctl offsets translate --group billing", "drctl offsets sync --yes"}},
	"verify": {description: "verify proves the live standby identical to the live active, record by record: per selected partition it\n" +
		"reads every committed source record up to the mirror's position and the standby record the exact offset\n" +
		"map says it became, from both clusters, and compares key, value, headers (drctl's provenance aside) and\n" +
		"timestamp. It reports the range proven identical, the records compared, and each difference (missing,\n" +
		"unexpected, content-differs, order-differs) with both offsets. --sample N compares every Nth record, reading\n" +
		"only the batches that hold them, for a quick look that proves nothing. While a failover's old active awaits\n" +
		"its wipe, it verifies the link before the flip (the new active holds every copy), and says so; --link names\n" +
		"any link. It changes nothing. Exit 0 identical, 1 a difference (or a partition not verified), 2 bad input,\n" +
		"3 a cluster unreachable. See docs/verify.md.",
		examples: []string{"drctl verify", "drctl verify --topic orders --partition 3", "drctl verify --since 1h -o json", "drctl verify --sample 100", "drctl verify --link 'east->west'"}},
	"offsets translate": {examples: []string{"drctl offsets translate --group billing", "drctl offsets translate -g billing -g shipping -o json"}},
	"offsets sync":      {examples: []string{"drctl offsets sync", "drctl offsets sync --group billing --yes"}},
	"plan": {description: "plan builds a plan from the topology and the live state of both clusters and prints it, changing\n" +
		"nothing. A saved plan runs with drctl apply, which refuses it when the topology or the roles changed since.",
		examples: []string{"drctl plan failover --to west", "drctl plan failover --to west --out plan.json"}},
	"plan failover": {description: "plan failover prints each step a failover to --to would take (preflight, fence the active, drain,\n" +
		"flip the roles, translate groups, hooks, salvage, wipe and reseed the old active), with what it expects before and intends after. With --out it\n" +
		"saves the plan as JSON for drctl apply. With --unplanned the active cluster is taken as lost: no drain and no\n" +
		"fence of it, the groups come from the standby's last snapshot and the run reports the RPO.",
		examples: []string{"drctl plan failover --to west", "drctl plan failover --to west --out plan.json && drctl apply plan.json --yes"}},
	"failover": {description: "failover plans a failover to --to and runs it: it checks both clusters, records the run in both,\n" +
		"fences the old active (failover.fence), drains the mirror, flips the roles (the epoch goes up), moves every\n" +
		"selected group's position exactly, runs the hooks, then salvages, wipes and re-seeds the old active as the\n" +
		"new standby.\n" +
		"On a terminal it prints the plan and asks you to type the target's name; without one it refuses unless\n" +
		"--yes. Ctrl-C finishes the current step and stops (drctl resume goes on); a second Ctrl-C cancels it.\n" +
		"With -o json it prints a JSON-lines event stream, one event per line (-o yaml: one YAML document per event).\n" +
		"--unplanned is refused while the active answers, unless --force-unplanned (the active is then fenced first).",
		examples: []string{"drctl failover --to west", "drctl failover --to west --yes", "drctl failover --to west --unplanned --yes -o json"}},
	"failback": {description: "failback is a planned failover back to the home active cluster (the topology's `active`), with\n" +
		"the same steps, confirmation and output as drctl failover. It is refused while a reseed runs.",
		examples: []string{"drctl failback", "drctl failback --yes"}},
	"apply": {description: "apply runs a plan saved by drctl plan ... --out. Before anything changes it re-derives the plan\n" +
		"from the plan's inputs and the live state, and refuses a stale plan (the topology or the roles changed since\n" +
		"it was made): make a new plan then. Confirmation and output are as for drctl failover.",
		examples: []string{"drctl apply plan.json", "drctl apply plan.json --yes -o json"}},
	"resume": {description: "resume finishes an interrupted failover, failback or reseed from the step it stopped at, from\n" +
		"this or any other machine: the run's progress is kept in both clusters. Without RUN-ID it resumes the run\n" +
		"recorded in progress (drctl status shows it), then puts right what a stopped disruptive drill left: it\n" +
		"releases its mirror pause and, unless another run moved the roles since, makes the cluster it found active\n" +
		"active again (see docs/drills.md).",
		examples: []string{"drctl resume", "drctl resume failover-20261201T101500-8feb83 --yes"}},
	"roles restore": {description: "roles restore writes the live roles back when the role state was deleted on both clusters\n" +
		"after a failover: --active names the cluster the applications use now, the other becomes the standby,\n" +
		"phase steady, at an epoch above every one the clusters' run records wrote. Until then drctl refuses to act\n" +
		"(status shows the roles as unknown, plans are refused, the mirror copies nothing) rather than take the\n" +
		"file's home roles for the live ones. Refused while either cluster still holds role state.",
		examples: []string{"drctl roles restore --active west", "drctl roles restore --active west --yes"}},
	"reseed": {description: "reseed salvages the records of a stale cluster that never reached the active (to a quarantine\n" +
		"topic on the active), wipes the stale cluster's selected topics and groups and re-seeds it from the active\n" +
		"as the new standby. A cluster that is not stale (the healthy standby) is refused unless --force, which\n" +
		"prints the reason it overrides.",
		examples: []string{"drctl reseed east", "drctl reseed east --yes", "drctl reseed west --force --yes"}},
	"fence": {description: "fence adds DENY WRITE ACLs on the selected topics of CLUSTER for the application principals\n" +
		"(recorded in the cluster, so that unfence removes exactly those) and verifies that they are in force.\n" +
		"The cluster needs an authorizer.",
		examples: []string{"drctl fence east", "drctl fence east -o json"}},
	"unfence": {description: "unfence removes exactly the ACLs drctl's fence added on CLUSTER, and no other.",
		examples: []string{"drctl unfence east"}},
	"sandbox": {examples: []string{"drctl sandbox", "drctl sandbox --dir /tmp/sb2 --east-port 19093 --west-port 29093 --mirror-listen 127.0.0.1:9478"}},
	"tui":     {examples: []string{"drctl tui", "drctl tui --read-only --interval 5s"}},
	"drill": {description: "drill rehearses disaster recovery and keeps the evidence: a drill (a canary, a planned or an\n" +
		"unplanned failover) measures RPO, RTO, duplicates and loss, judges them against the objectives and is\n" +
		"recorded in both clusters, hash-chained and (with a signing key) signed; history lists the drills,\n" +
		"report prints one in full, verify-report checks a signed report.",
		examples: []string{"drctl drill run", "drctl drill history", "drctl drill report ID --format html --out drill.html"}},
	"drill run": {examples: []string{"drctl drill run", "drctl drill run --kind failover --yes", "drctl drill run nightly --report drill.md"}},
	"drill schedule": {description: "schedule runs the drills the topology schedules (its drills section), each at its time, and\n" +
		"records each one as drill run does; it runs until stopped.",
		examples: []string{"drctl drill schedule"}},
	"drill history": {description: "history lists the recorded drills, newest first, from both clusters and the local journal:\n" +
		"id, name, kind, verdict and the measured figures. It changes nothing. With --verify it checks instead\n" +
		"that the history is whole: each record carries the digest of the one before, so a removed or edited\n" +
		"record is named (exit 1), as is a signature that does not verify; an intact chain exits 0.",
		examples: []string{"drctl drill history", "drctl drill history --drill nightly --limit 10 -o json", "drctl drill history --verify"}},
	"drill report": {description: "report prints the full evidence of one drill (its id from drill history): the timeline, the\n" +
		"measured RPO, RTO, duplicates and loss against the objectives and an Evidence section for auditors,\n" +
		"as Markdown, JSON (the record as signed), JUnit XML, a self-contained HTML page or the signed DSSE\n" +
		"envelope (--format), to standard output or --out; the JSON of a signed drill gets FILE.dsse beside it.",
		examples: []string{"drctl drill report ID", "drctl drill report ID --format html --out drill.html", "drctl drill report ID --format json --out drill.json"}},
	"drill verify-report": {description: "verify-report checks a signed drill report: FILE is the report's JSON (its DSSE envelope\n" +
		"FILE.dsse beside it, or --signature) or the envelope itself. The signature must verify with the\n" +
		"signer's public key (--public-key, or the topology's signing key) over the very bytes of the report.\n" +
		"Exit 0 valid, 1 invalid or tampered (it says why), 2 bad input. It contacts no cluster.",
		examples: []string{"drctl drill verify-report drill.json --public-key evidence.pub", "drctl drill verify-report drill.json.dsse --public-key evidence.pub -o json"}},
	"drill evidence-key": {description: "evidence-key prints the public key of the topology's drills.evidence.signing_key, PEM, with\n" +
		"its key id: what an auditor needs to check signed drill reports, and nothing secret. With --new FILE\n" +
		"it makes a new ed25519 signing key in FILE (mode 0600, never overwriting) and prints its public key.",
		examples: []string{"drctl drill evidence-key > evidence.pub", "drctl drill evidence-key --new /etc/drctl/evidence.pem"}},
	"version": {examples: []string{"drctl version", "drctl version -o json", "drctl --version"}},
}

// applyHelp gives c its long help and marks its required flags as such.
func applyHelp(path string, c *cli.Command) {
	if h, ok := helpTexts[path]; ok {
		if c.Description == "" {
			c.Description = h.description
		}
		if len(h.examples) > 0 && !strings.Contains(c.Description, "Examples:") {
			c.Description += "\n\nExamples:\n   " + strings.Join(h.examples, "\n   ")
		}
	}
	for _, f := range c.Flags {
		markRequired(f)
	}
}

// markRequired starts a required flag's usage with "(required)", so help,
// completion and the generated docs say so.
func markRequired(f cli.Flag) {
	r, ok := f.(cli.RequiredFlag)
	if !ok || !r.IsRequired() {
		return
	}
	v := reflect.ValueOf(f)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return
	}
	u := v.Elem().FieldByName("Usage")
	if u.IsValid() && u.CanSet() && u.Kind() == reflect.String && !strings.HasPrefix(u.String(), "(required)") {
		u.SetString("(required) " + u.String())
	}
}
