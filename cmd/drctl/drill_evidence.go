package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/drctl/drctl/drill"
	"github.com/drctl/drctl/drill/evidence"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/topology"
)

// maxReportFile bounds what drill verify-report reads: a drill record is
// tens of KiB (500 latency samples at most).
const maxReportFile = 16 << 20

func drillVerifyReportCommand() *cli.Command {
	return &cli.Command{
		Name:      "verify-report",
		Usage:     "check a signed drill report (exit 0 valid, 1 invalid or tampered, 2 bad input)",
		ArgsUsage: "FILE",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "public-key", TakesFile: true, Usage: "the signer's public key, PEM (default: the public half of the topology's drills.evidence.signing_key)"},
			&cli.StringFlag{Name: "signature", TakesFile: true, Usage: "the DSSE envelope of a report JSON FILE (default: FILE.dsse)"},
		},
		Action: verifyReportAction,
	}
}

// reportCheck is drill verify-report's answer (-o json).
type reportCheck struct {
	Valid         bool           `json:"valid"`
	Reason        string         `json:"reason,omitempty"`
	File          string         `json:"file"`
	Envelope      string         `json:"envelope"`
	KeyID         string         `json:"key_id"`
	PayloadDigest string         `json:"payload_digest,omitempty"`
	DrillID       string         `json:"drill_id,omitempty"`
	Drill         string         `json:"drill,omitempty"`
	Kind          string         `json:"kind,omitempty"`
	Topology      string         `json:"topology,omitempty"`
	Verdict       string         `json:"verdict,omitempty"`
	StartedAt     *time.Time     `json:"started_at,omitempty"`
	Chain         *evidence.Link `json:"chain,omitempty"`
}

func verifyReportAction(c *cli.Context) error {
	args, err := drillArgs(c)
	if err != nil {
		return err
	}
	if len(args) != 1 {
		return withCode(exitBadInput, errors.New("name the report: drctl drill verify-report FILE (a report JSON with FILE.dsse beside it, or the .dsse envelope itself)"))
	}
	file := args[0]
	data, err := readBounded(file)
	if err != nil {
		return withCode(exitBadInput, fmt.Errorf("read %s: %w", file, err))
	}
	pub, err := verifierKey(c)
	if err != nil {
		return err
	}
	check := reportCheck{File: file, KeyID: evidence.KeyID(pub)}
	var report []byte // the report JSON the envelope must sign, when FILE is one
	env, perr := evidence.ParseEnvelope(data)
	switch {
	case perr == nil:
		check.Envelope = file
	case !looksLikeRecord(data):
		return withCode(exitBadInput, fmt.Errorf("%s is neither a drill report's JSON nor its DSSE envelope (%v)", file, perr))
	default:
		report = data
		check.Envelope = c.String("signature")
		if check.Envelope == "" {
			check.Envelope = file + ".dsse"
		}
		raw, err := readBounded(check.Envelope)
		switch {
		case errors.Is(err, os.ErrNotExist) && !c.IsSet("signature"):
			return invalidReport(c, check, fmt.Sprintf("not signed: there is no %s beside it (drctl drill report ID --format json --out FILE writes FILE.dsse when the drill was signed; --signature names another file)", check.Envelope))
		case err != nil:
			return withCode(exitBadInput, fmt.Errorf("read the signature %s: %w", check.Envelope, err))
		}
		if env, err = evidence.ParseEnvelope(raw); err != nil {
			return withCode(exitBadInput, fmt.Errorf("the signature %s: %w", check.Envelope, err))
		}
	}
	payload, err := evidence.Verify(env, pub)
	if err != nil {
		return invalidReport(c, check, strings.TrimPrefix(err.Error(), evidence.ErrInvalid.Error()+": "))
	}
	check.PayloadDigest = evidence.Digest(payload)
	if report != nil && !bytes.Equal(report, payload) {
		return invalidReport(c, check, fmt.Sprintf("it is not what was signed (it differs from the signed payload at byte %d): the report was changed after signing; the envelope %s holds the signed report", firstDiff(report, payload), check.Envelope))
	}
	rec, err := drill.DecodeRecord(payload)
	if err != nil {
		return invalidReport(c, check, "the signed payload is not a drill record: "+err.Error())
	}
	check.Valid, check.DrillID, check.Drill, check.Kind, check.Topology, check.Verdict, check.Chain = true, rec.ID, rec.Drill, rec.Kind, rec.Topology, string(rec.Verdict), rec.Chain
	check.StartedAt = &rec.StartedAt
	return render(c, check, func(w io.Writer) error {
		fmt.Fprintf(w, "valid: drill %s (drill %s, kind %s, topology %s, verdict %s, started %s)\n", rec.ID, rec.Drill, rec.Kind, rec.Topology, rec.Verdict, rec.StartedAt.UTC().Format(time.RFC3339))
		fmt.Fprintf(w, "  signed by key %s (%s)\n", check.KeyID, check.Envelope)
		if report != nil {
			fmt.Fprintf(w, "  %s is the signed payload, byte for byte (%s)\n", file, check.PayloadDigest)
		} else {
			fmt.Fprintf(w, "  payload %s\n", check.PayloadDigest)
		}
		switch {
		case rec.Chain == nil:
			fmt.Fprintln(w, "  chain: not chained (recorded before drctl chained drill records)")
		case rec.Chain.Seq == 1:
			fmt.Fprintf(w, "  chain: record 1 of the chain of topology %s\n", rec.Topology)
		default:
			fmt.Fprintf(w, "  chain: record %d of the chain of topology %s, after %s (%s); drctl drill history --verify checks the chain\n", rec.Chain.Seq, rec.Topology, rec.Chain.PrevID, rec.Chain.PrevDigest)
		}
		return nil
	})
}

// invalidReport reports why a report does not verify (exit 1); -o json
// prints the answer too.
func invalidReport(c *cli.Context, check reportCheck, reason string) error {
	check.Valid, check.Reason = false, reason
	if !humanOutput(c) {
		if err := render(c, check, nil); err != nil {
			return err
		}
	}
	return withCode(exitFailure, fmt.Errorf("INVALID: %s: %s", check.File, reason))
}

// verifierKey is --public-key's key, or the public half of the topology's
// signing key.
func verifierKey(c *cli.Context) (ed25519.PublicKey, error) {
	if path := c.String("public-key"); path != "" {
		data, err := readBounded(path)
		if err != nil {
			return nil, withCode(exitBadInput, fmt.Errorf("--public-key: %w", err))
		}
		pub, err := evidence.ParsePublicKey(data)
		if err != nil {
			return nil, withCode(exitBadInput, fmt.Errorf("--public-key %s: %w", path, err))
		}
		return pub, nil
	}
	path, err := topology.Discover(c.String("config"))
	if err != nil {
		return nil, withCode(exitBadInput, fmt.Errorf("give the signer's public key with --public-key FILE (drctl drill evidence-key prints it), or a topology with drills.evidence.signing_key: %w", err))
	}
	topo, err := topology.Load(path)
	if err != nil {
		return nil, withCode(exitBadInput, fmt.Errorf("give the signer's public key with --public-key FILE, or a topology with drills.evidence.signing_key: %w", err))
	}
	k := topo.Drills.Evidence.SigningKey
	if k == nil {
		return nil, withCode(exitBadInput, fmt.Errorf("%s sets no drills.evidence.signing_key: give the signer's public key with --public-key FILE", topo.Path))
	}
	return k.PublicKey(), nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxReportFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxReportFile {
		return nil, fmt.Errorf("%s is larger than %d MiB: not a drill report", path, maxReportFile>>20)
	}
	return data, nil
}

// looksLikeRecord reports whether data decodes as a drill record.
func looksLikeRecord(data []byte) bool {
	_, err := drill.DecodeRecord(data)
	return err == nil
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func drillEvidenceKeyCommand() *cli.Command {
	return &cli.Command{
		Name:  "evidence-key",
		Usage: "print the public key that checks signed drill reports (or make a signing key with --new)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "new", TakesFile: true, Usage: "write a new ed25519 signing key to this file (mode 0600; never overwrites) and print its public key"},
		},
		Action: func(c *cli.Context) error {
			if path := c.String("new"); path != "" {
				return newEvidenceKey(c, path)
			}
			topo, err := loadTopology(c)
			if err != nil {
				return err
			}
			k := topo.Drills.Evidence.SigningKey
			if k == nil {
				return withCode(exitBadInput, fmt.Errorf("%s sets no drills.evidence.signing_key, so drill records are chained but not signed; make a key with drctl drill evidence-key --new FILE and name it there", topo.Path))
			}
			return printPublicKey(c, k.PublicKey(), "the public key of drills.evidence.signing_key ("+k.Source+")")
		},
	}
}

// publicKeyOut is drill evidence-key's answer (-o json).
type publicKeyOut struct {
	KeyID     string `json:"key_id"`
	PublicKey string `json:"public_key"`
	// SigningKey is the new key's file (--new only).
	SigningKey string `json:"signing_key,omitempty"`
}

func printPublicKey(c *cli.Context, pub ed25519.PublicKey, what string) error {
	out := publicKeyOut{KeyID: evidence.KeyID(pub), PublicKey: string(evidence.MarshalPublicKey(pub))}
	if path := c.String("new"); path != "" {
		out.SigningKey = path
	}
	return render(c, out, func(w io.Writer) error {
		// Text before the BEGIN line is outside the PEM block: the output
		// saved as a file is the public key, for drctl and openssl alike.
		fmt.Fprintf(w, "# %s\n# key id %s\n%s", what, out.KeyID, out.PublicKey)
		return nil
	})
}

func newEvidenceKey(c *cli.Context, path string) error {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return withCode(exitBadInput, fmt.Errorf("%s exists: drctl never overwrites a key (reports signed with it would no longer verify with a new one); name another file", path))
		}
		return withCode(exitBadInput, err)
	}
	if err := pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return printPublicKey(c, priv.Public().(ed25519.PublicKey), fmt.Sprintf("a new signing key is in %s (mode 0600); name it in the topology as drills: {evidence: {signing_key: %s}}; its public key", path, path))
}

// historyVerify runs drill history --verify: exit 0 when the chain holds,
// 1 when a record was removed or edited (or a signature does not verify),
// 3 when a cluster could not be read (what was read is still reported).
func historyVerify(c *cli.Context, topo *topology.Topology) error {
	o := drill.VerifyOptions{}
	if path := c.String("public-key"); path != "" {
		data, err := readBounded(path)
		if err != nil {
			return withCode(exitBadInput, fmt.Errorf("--public-key: %w", err))
		}
		if o.PublicKey, err = evidence.ParsePublicKey(data); err != nil {
			return withCode(exitBadInput, fmt.Errorf("--public-key %s: %w", path, err))
		}
	}
	ctx, cancel := context.WithTimeout(c.Context, time.Minute)
	defer cancel()
	clusters := kafkaconn.Open(ctx, topo)
	defer clusters.Close()
	check, verr := drill.VerifyHistory(ctx, clusters, o)
	if err := render(c, check, func(w io.Writer) error { return historyCheckText(w, check) }); err != nil {
		return err
	}
	switch {
	case !check.Intact():
		return withCode(exitFailure, fmt.Errorf("the drill history of %s does not hold: %d problem(s) (above)", topo.Name, len(check.Problems)))
	case verr != nil:
		return withCode(exitUnreachable, fmt.Errorf("the drill history was checked only where it could be read: %w", verr))
	}
	return nil
}

func historyCheckText(w io.Writer, ch *drill.HistoryCheck) error {
	state := "INTACT"
	switch {
	case !ch.Intact():
		state = "BROKEN"
	case ch.Chained == 0:
		state = "nothing chained, nothing verified"
	}
	fmt.Fprintf(w, "drill history of %s: %s\n", ch.Topology, state)
	fmt.Fprintf(w, "  read: %s", strings.Join(ch.Read, ", "))
	if len(ch.Unreadable) > 0 {
		fmt.Fprintf(w, "; NOT read: %s", strings.Join(ch.Unreadable, ", "))
	}
	fmt.Fprintln(w)
	if ch.Chained > 0 {
		fmt.Fprintf(w, "  chained: %d record(s), seq %d (%s) to seq %d (%s)\n", ch.Chained, ch.FirstSeq, ch.FirstID, ch.NewestSeq, ch.NewestID)
	} else {
		fmt.Fprintln(w, "  chained: none")
	}
	switch {
	case ch.Signed == 0:
		fmt.Fprintf(w, "  signatures: none of the %d chained record(s) is signed\n", ch.Chained)
	case ch.KeyID == "":
		fmt.Fprintf(w, "  signatures: %d of %d chained record(s) signed, none checked (no key: --public-key FILE)\n", ch.Signed, ch.Chained)
	default:
		fmt.Fprintf(w, "  signatures: %d of %d chained record(s) signed; %d checked with key %s and valid\n", ch.Signed, ch.Chained, ch.SignaturesChecked, ch.KeyID)
	}
	if n := len(ch.Unchained); n > 0 {
		var before, after, started []string
		for _, u := range ch.Unchained {
			switch {
			case u.Unfinished:
				started = append(started, u.ID)
			case u.AfterStart:
				after = append(after, u.ID)
			default:
				before = append(before, u.ID)
			}
		}
		fmt.Fprintf(w, "  not chained: %d record(s), not verified:\n", n)
		for _, g := range []struct {
			why string
			ids []string
		}{{"recorded before drctl chained drill records", before}, {"recorded after the chain began without a link (by a drctl that does not chain, or inserted)", after},
			{"started records of drills that recorded no result yet (running, or killed)", started}} {
			if len(g.ids) > 0 {
				fmt.Fprintf(w, "    %s: %s\n", g.why, strings.Join(g.ids, ", "))
			}
		}
	}
	if len(ch.Problems) > 0 {
		fmt.Fprintln(w, "  problems:")
		for _, p := range ch.Problems {
			fmt.Fprintf(w, "    - %s: %s\n", p.Kind, p.Message)
		}
	}
	if len(ch.Notes) > 0 {
		fmt.Fprintln(w, "  notes:")
		for _, n := range ch.Notes {
			fmt.Fprintf(w, "    - %s\n", n)
		}
	}
	return nil
}
