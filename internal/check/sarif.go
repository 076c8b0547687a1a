package check

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifRule struct {
	ID               string       `json:"id"`
	ShortDescription sarifMessage `json:"shortDescription"`
}

type sarifLocation struct {
	PhysicalLocation struct {
		ArtifactLocation struct {
			URI string `json:"uri"`
		} `json:"artifactLocation"`
		Region *struct {
			StartLine int `json:"startLine"`
		} `json:"region,omitempty"`
	} `json:"physicalLocation"`
}

type sarifResult struct {
	RuleID    string          `json:"ruleId"`
	Level     string          `json:"level"`
	Message   sarifMessage    `json:"message"`
	Locations []sarifLocation `json:"locations,omitempty"`
	// RelatedLocations are the other lines of the same defect in its
	// object; OccurrenceCount how many times it occurs there.
	RelatedLocations []sarifLocation   `json:"relatedLocations,omitempty"`
	OccurrenceCount  int               `json:"occurrenceCount,omitempty"`
	Properties       map[string]string `json:"properties,omitempty"`
}

func sarifAt(file string, line int) sarifLocation {
	var loc sarifLocation
	loc.PhysicalLocation.ArtifactLocation.URI = file
	if line > 0 {
		loc.PhysicalLocation.Region = &struct {
			StartLine int `json:"startLine"`
		}{line}
	}
	return loc
}

// WriteSARIF writes the findings (and the checks that could not run, as
// notes) as a SARIF 2.1.0 log; file paths are relative to the repository.
// Its results are the text report's blocks: one per defect, the other
// places it is written as relatedLocations, warnings at level note.
func WriteSARIF(w io.Writer, r *Result) error {
	var rules []sarifRule
	// Every detector of the table is a rule, in name order.
	for _, d := range detectorsByID() {
		rules = append(rules, sarifRule{ID: string(d.ID), ShortDescription: sarifMessage{d.Short}})
	}
	rules = append(rules, sarifRule{ID: "not-checked", ShortDescription: sarifMessage{"a gate that could not be checked (the run is incomplete)"}})
	// One result per defect, grouped as the text report groups them (issue
	// #45): the first finding's location, every other place it is written
	// as a related location; advisories (warnings) are notes, so a
	// code-scanning page shows the errors.
	results := []sarifResult{}
	for _, g := range verify.GroupFindings(r.Checks) {
		f := g.Findings[0]
		level := "error"
		switch f.Verdict {
		case verify.Warn:
			level = "note"
		case verify.Pass:
			level = "none" // allowed by the repository's policy: listed, not raised
		}
		props := map[string]string{"gate": g.Gate}
		if f.Policy != "" {
			props["policy"] = f.Policy
		}
		if ks := g.Kustomizations(); len(ks) > 0 {
			props["kustomization"] = strings.Join(ks, ", ")
		}
		if len(g.Findings) > 1 {
			props["findings"] = strconv.Itoa(len(g.Findings))
		}
		res := sarifResult{RuleID: string(f.Detector), Level: level, Message: sarifMessage{g.Summary()}, Properties: props}
		if f.Count > 1 {
			res.OccurrenceCount = f.Count
		}
		seen := map[string]bool{}
		for i, x := range g.Findings {
			if x.File == "" {
				continue
			}
			lines := append([]int{x.Line}, x.Lines...)
			for _, l := range lines {
				key := x.File + ":" + strconv.Itoa(l)
				if seen[key] {
					continue
				}
				seen[key] = true
				if res.Locations == nil && i == 0 {
					res.Locations = []sarifLocation{sarifAt(x.File, l)}
					continue
				}
				res.RelatedLocations = append(res.RelatedLocations, sarifAt(x.File, l))
			}
		}
		results = append(results, res)
	}
	for _, c := range r.Checks {
		if c.Verdict == verify.Skip {
			results = append(results, sarifResult{RuleID: "not-checked", Level: "note", Message: sarifMessage{c.Message}, Properties: map[string]string{"gate": c.ID}})
		}
	}
	doc := map[string]any{
		"$schema": "https://json.schemastore.org/sarif-2.1.0.json",
		"version": "2.1.0",
		"runs": []any{map[string]any{
			"tool":    map[string]any{"driver": map[string]any{"name": "bootstrap check", "rules": rules}},
			"results": results,
		}},
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
