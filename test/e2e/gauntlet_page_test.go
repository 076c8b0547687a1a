//go:build e2e

package e2e

// The gauntlet's evidence page: report.md (a table, then per-stage
// evidence), junit.xml (one case per stage) and timeline.svg (the bring-up,
// one bar per Kustomization), all built from what the stages read back.

import (
	"encoding/xml"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

const clearLine = "Clear. Every stage passes."

// stageResult is one row of the page.
type stageResult struct {
	Key, Title string
	Verdict    string // pass, fail, skip
	Duration   time.Duration
	Detail     string
	Evidence   []string
}

// bar is one Kustomization of the bring-up timeline, relative to its start.
type bar struct {
	Name       string
	Start, End time.Duration
	Ready      bool
}

type page struct {
	Started  time.Time
	Break    string
	Notes    []string
	Stages   []*stageResult
	Timeline []bar
	Oracle   []string // markdown table rows of the oracle comparison
}

func (p *page) allPass() bool {
	for _, s := range p.Stages {
		if s.Verdict != "pass" {
			return false
		}
	}
	return len(p.Stages) > 0
}

func mdCell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

// table is the page's summary table (also printed in the test log, so CI
// shows it).
func (p *page) table() string {
	var b strings.Builder
	b.WriteString("| # | Stage | Verdict | Duration | Detail |\n|---|---|---|---|---|\n")
	for i, s := range p.Stages {
		v := strings.ToUpper(s.Verdict)
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", i+1, mdCell(s.Title), v, s.Duration.Round(100*time.Millisecond), mdCell(s.Detail))
	}
	return b.String()
}

func (p *page) markdown() string {
	var b strings.Builder
	b.WriteString("# The gauntlet\n\n")
	fmt.Fprintf(&b, "Run %s UTC on fresh sandboxes (kube-apiserver, etcd, kwok, source-, kustomize- and helm-controller %s/%s/%s, a real Git server, a chart registry).",
		p.Started.UTC().Format("2006-01-02 15:04:05"), suite.versions["SOURCE_CONTROLLER_VERSION"], suite.versions["KUSTOMIZE_CONTROLLER_VERSION"], suite.versions["HELM_CONTROLLER_VERSION"])
	if p.Break != "" {
		fmt.Fprintf(&b, " **BREAK=%s**: that stage's input is broken on purpose; it must fail below.", p.Break)
	}
	b.WriteString("\n\n")
	b.WriteString(p.table())
	if len(p.Notes) > 0 {
		b.WriteString("\n")
		for _, n := range p.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	if len(p.Timeline) > 0 {
		b.WriteString("\nThe bring-up (stage 1), one bar per Kustomization from its creation (read back) to the moment the gauntlet first saw it Ready at the revision (polled every 500 ms): ![timeline](timeline.svg)\n")
	}
	b.WriteString("\n## Evidence\n")
	for i, s := range p.Stages {
		fmt.Fprintf(&b, "\n### %d. %s — %s (%s)\n\n%s\n", i+1, s.Title, strings.ToUpper(s.Verdict), s.Duration.Round(100*time.Millisecond), s.Detail)
		if len(s.Evidence) > 0 {
			b.WriteString("\n")
			for _, e := range s.Evidence {
				fmt.Fprintf(&b, "- %s\n", strings.ReplaceAll(e, "\n", " "))
			}
		}
		if s.Key == "oracle" && len(p.Oracle) > 0 {
			b.WriteString("\n| object | field | bootstrap | stock path | explanation |\n|---|---|---|---|---|\n")
			for _, r := range p.Oracle {
				b.WriteString(r + "\n")
			}
		}
	}
	b.WriteString("\n")
	if p.allPass() {
		b.WriteString(clearLine + "\n")
	} else {
		var bad []string
		for i, s := range p.Stages {
			if s.Verdict != "pass" {
				bad = append(bad, fmt.Sprintf("%d %s (%s)", i+1, s.Key, s.Verdict))
			}
		}
		fmt.Fprintf(&b, "Not clear: %s.\n", strings.Join(bad, ", "))
	}
	return b.String()
}

type junitSuite struct {
	XMLName  xml.Name    `xml:"testsuite"`
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string     `xml:"name,attr"`
	Classname string     `xml:"classname,attr"`
	Time      string     `xml:"time,attr"`
	Failure   *junitFail `xml:"failure,omitempty"`
	Skipped   *junitSkip `xml:"skipped,omitempty"`
	SystemOut string     `xml:"system-out,omitempty"`
}

type junitFail struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

type junitSkip struct {
	Message string `xml:"message,attr"`
}

func (p *page) junit() ([]byte, error) {
	s := junitSuite{Name: "gauntlet"}
	var total time.Duration
	for i, st := range p.Stages {
		c := junitCase{Name: fmt.Sprintf("%d-%s", i+1, st.Key), Classname: "gauntlet", Time: fmt.Sprintf("%.3f", st.Duration.Seconds()),
			SystemOut: st.Detail + "\n" + strings.Join(st.Evidence, "\n")}
		switch st.Verdict {
		case "fail":
			c.Failure = &junitFail{Message: st.Detail, Body: strings.Join(st.Evidence, "\n")}
			s.Failures++
		case "skip":
			c.Skipped = &junitSkip{Message: st.Detail}
			s.Skipped++
		}
		total += st.Duration
		s.Cases = append(s.Cases, c)
	}
	s.Tests = len(s.Cases)
	s.Time = fmt.Sprintf("%.3f", total.Seconds())
	b, err := xml.MarshalIndent(s, "", "  ")
	return append([]byte(xml.Header), b...), err
}

// svg draws the bring-up: one bar per Kustomization, in the order they
// became Ready.
func (p *page) svg() string {
	bars := append([]bar(nil), p.Timeline...)
	sort.SliceStable(bars, func(i, j int) bool { return bars[i].End < bars[j].End })
	var max time.Duration
	for _, b := range bars {
		if b.End > max {
			max = b.End
		}
	}
	if max < time.Second {
		max = time.Second
	}
	const left, width, row = 130, 520, 22
	h := row*len(bars) + 40
	scale := func(d time.Duration) float64 { return float64(left) + float64(width)*d.Seconds()/max.Seconds() }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", left+width+60, h)
	fmt.Fprintf(&b, `<text x="4" y="14">bring-up: Kustomization created → Ready (s since bootstrap up started)</text>`+"\n")
	for i, br := range bars {
		y := 24 + i*row
		color := "#3a7"
		if !br.Ready {
			color = "#c33"
		}
		x0, x1 := scale(br.Start), scale(br.End)
		if x1-x0 < 2 {
			x1 = x0 + 2
		}
		fmt.Fprintf(&b, `<text x="4" y="%d">%s</text>`+"\n", y+14, html.EscapeString(br.Name))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="16" fill="%s"/>`+"\n", x0, y+2, x1-x0, color)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%.0fs</text>`+"\n", x1+4, y+14, br.End.Seconds())
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#888"/>`+"\n", left, h-12, left+width, h-12)
	fmt.Fprintf(&b, `<text x="%d" y="%d">0</text><text x="%d" y="%d">%.0fs</text>`+"\n", left, h-1, left+width-20, h-1, max.Seconds())
	b.WriteString("</svg>\n")
	return b.String()
}

// write puts report.md, junit.xml and timeline.svg into dir.
func (p *page) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if len(p.Timeline) > 0 {
		if err := os.WriteFile(filepath.Join(dir, "timeline.svg"), []byte(p.svg()), 0o644); err != nil {
			return err
		}
	}
	j, err := p.junit()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "junit.xml"), j, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(p.markdown()), 0o644)
}
