// Package report renders a drill's evidence (a drill.Record) for people and
// tools: Markdown, JSON, JUnit XML and one self-contained HTML file with
// inline SVG charts (no external assets, no JavaScript). It only renders: it
// reads nothing but the record it is given.
//
// # Contracts
//
//   - The HTML loads nothing from anywhere (no script, no remote font or
//     image): it opens as it is, offline.
//   - The JSON is the record itself (drill.Record's schema); the JUnit XML
//     parses as JUnit, so CI systems show a drill as tests.
package report
