// Package verify proves a standby identical to its source, record by
// record, through the mirror's exact offset map (drctl verify).
//
// For each selected source partition of a link it reads the committed
// source records of a range and the committed standby records the map
// sends them to, side by side, from both clusters: never from a mirror's
// memory. Each source record is compared with the standby record at the
// target offset the map gives it: key, value, headers (drctl's provenance
// headers aside; the source-offset header, where present, must name the
// source record) and timestamp (unless the standby topic uses
// LogAppendTime). Differences are of four kinds: Missing, Unexpected,
// ContentDiffers, OrderDiffers.
//
// It owns the comparison and its report, and the mirror's continuous
// proof (Follow): rounds of Run from each partition's watermark, kept on
// the standby (linkstate.Proof), and their metrics (drctl_verify_*). It
// prints nothing; Run writes to no cluster, Follow only the link's proof
// records. It must not be imported by the mirror engine: it checks the
// engine's work and shares none of its state (drctl mirror run starts
// Follow beside each link through mirror.DaemonOptions.Beside).
//
// # Contracts
//
//   - Only committed records count, on both sides: control records and the
//     records of aborted transactions are read past (internal/kafkaread),
//     and offsets the map skips (markers, aborted or compacted source
//     records) are holes, not differences.
//   - "Identical" for a partition means: every committed source record of
//     [SourceFrom, SourceTo) was compared with its copy and found identical,
//     and the standby holds no committed record in [TargetFrom, TargetTo)
//     that no source record maps to. SourceTo is the mirror's read position
//     in the map; records mirrored later are not compared.
//   - A report never claims more than was compared: a sampled run reports
//     "no difference seen", never identical; a partition that could not be
//     read is NotVerified with its reason; counts carry their denominators
//     (Compared of SourceRecords).
//   - Memory does not grow with a partition's size: each partition is read
//     as two streams holding one fetch response each, and only the first
//     Options.Details differences are kept (the others are counted).
//     What grows with the partition count is the offset map (as for
//     offset translation) and one small report per partition.
//   - Follow counts a difference once: a round starts where the last one
//     ended (on the standby no later than where it stopped reading, so a
//     record written into the standby between two rounds is found), and a
//     partition's Proven watermark stays where its first difference was.
//   - The standby's end offsets are read before the map, so every record
//     the mirror committed below them is in the map; an unmapped record at
//     the standby's tail is looked up in the map once more before it is
//     called Unexpected.
package verify
