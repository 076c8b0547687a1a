package diff

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// bigResult is a result with n objects, object i's diff i*lineLen*lines
// bytes long (so the largest are the last), one holding a run of
// backquotes.
func bigResult(n, lines int) *Result {
	k := &Kustomization{Ref: "flux-system/apps", Change: Changed, Prune: true}
	for i := 1; i <= n; i++ {
		var d strings.Builder
		for l := 0; l < i*lines; l++ {
			fmt.Fprintf(&d, "+  line-%d-%d: %s\n", i, l, strings.Repeat("x", 60))
		}
		k.Objects = append(k.Objects, &Object{Key: ObjectKey{Kind: "ConfigMap", Namespace: "default", Name: fmt.Sprintf("cm-%02d", i)}, Change: Changed, Action: "updated", Diff: d.String()})
	}
	return &Result{Base: Revision{Rev: "main", Commit: strings.Repeat("a", 40)}, Head: Revision{Rev: "work tree"},
		Clusters: []*Cluster{{Path: "clusters/dev", Change: Changed, Kustomizations: []*Kustomization{k}}}}
}

func markdownOf(t *testing.T, r *Result, o MarkdownOptions) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteMarkdown(&b, r, o); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// fenceBalance checks every fence opened is closed by the same fence and
// no <details> is left open.
func fenceBalance(t *testing.T, md string) {
	t.Helper()
	open := ""
	for _, l := range strings.Split(md, "\n") {
		f := strings.TrimRight(l, "abcdefghijklmnopqrstuvwxyz")
		if open == "" {
			if strings.HasPrefix(l, "```") {
				open = f
			}
			continue
		}
		if l == open {
			open = ""
		}
	}
	if open != "" {
		t.Errorf("fence %q left open:\n%s", open, md)
	}
	if o, c := strings.Count(md, "<details"), strings.Count(md, "</details>"); o != c {
		t.Errorf("%d <details> opened, %d closed", o, c)
	}
}

func TestDiffMarkdownLimit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		n, lines  int
		limit     int
		truncated []string // objects named in the notice
		whole     []string // objects shown whole
		summary   bool     // only the summary fits
	}{
		{name: "fits: nothing cut", n: 3, lines: 2, limit: 0, whole: []string{"cm-01", "cm-02", "cm-03"}},
		{name: "the largest cut first", n: 10, lines: 20, limit: 40000,
			truncated: []string{"cm-10", "cm-09", "cm-03"}, whole: []string{"cm-01", "cm-02"}},
		// More than ten cut: the first ten named, the rest counted.
		{name: "GitHub's limit by default", n: 45, lines: 1, limit: 0, truncated: []string{"cm-24", "cm-33", "… and 12 more"}, whole: []string{"cm-01"}},
		{name: "not even the summary fits", n: 3, lines: 2, limit: 300, summary: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := markdownOf(t, bigResult(tc.n, tc.lines), MarkdownOptions{Limit: tc.limit})
			limit := tc.limit
			if limit == 0 {
				limit = CommentLimit - commentMargin
			}
			if len(md) > limit {
				t.Fatalf("%d bytes, over the limit %d", len(md), limit)
			}
			fenceBalance(t, md)
			if tc.summary {
				if !strings.Contains(md, "no diff is shown") || strings.Contains(md, "```") {
					t.Errorf("want the summary alone, saying so:\n%s", md)
				}
				return
			}
			notice := regexp.MustCompile(`(?s)\*\*(\d+) diff\(s\) truncated\*\*.*?\n\n`).FindString(md)
			if (notice != "") != (len(tc.truncated) > 0) {
				t.Fatalf("truncation notice %q, want one naming %v", notice, tc.truncated)
			}
			if notice != "" && !strings.Contains(notice, "`bootstrap diff --base "+strings.Repeat("a", 40)+"`") {
				t.Errorf("the notice does not say how to see them: %s", notice)
			}
			for _, name := range tc.truncated {
				if !strings.Contains(notice, "ConfigMap default/"+name) && !strings.Contains(notice, name) {
					t.Errorf("%s not named as truncated in %q", name, notice)
				}
			}
			for _, name := range tc.whole {
				if strings.Contains(notice, "ConfigMap default/"+name+"\n") {
					t.Errorf("%s truncated, want it whole", name)
				}
				// Its last line is there.
				var last string
				fmt.Sscanf(name, "cm-%s", &last)
				if !strings.Contains(md, "line-"+strings.TrimLeft(last, "0")+"-") {
					t.Errorf("%s's diff not shown", name)
				}
			}
		})
	}
}

func TestDiffMarkdownBackquotes(t *testing.T) {
	r := bigResult(1, 1)
	o := r.Clusters[0].Kustomizations[0].Objects[0]
	o.Diff = "+  README: |\n+    ```sh\n+    make\n+    ````\n+    ```\n"
	o.Action = "updated; `a|b` <script>"
	r.Clusters[0].Windows = []*Window{{Reader: "flux-system/apps", Applier: "flux-system/vars", Object: "ConfigMap/flux-system/vars",
		Steps: []string{"if flux-system/apps reconciles before flux-system/vars: ConfigMap default/x renders `a: ``b``` (fail open) → updated <b>"}}}
	md := markdownOf(t, r, MarkdownOptions{})
	fenceBalance(t, md)
	for _, want := range []string{"`````diff\n+  README: |\n+    ```sh", "+    ```\n`````\n", "&lt;script&gt;", "&lt;b&gt;", "windows=1", "**⚠ 1 step(s)**", "> [!WARNING]"} {
		if !strings.Contains(md, want) {
			t.Errorf("want %q in:\n%s", want, md)
		}
	}
	if strings.Contains(md, "<script>") || strings.Contains(md, "<b>") {
		t.Errorf("raw HTML from the content:\n%s", md)
	}
}

func TestDiffMarkdownMarker(t *testing.T) {
	for _, tc := range []struct {
		r    *Result
		want string
	}{
		{bigResult(1, 1), MarkdownMarker + " changed=true failed=false windows=0 -->\n"},
		{&Result{Clusters: []*Cluster{{Path: "clusters/dev", Change: Unchanged}}}, MarkdownMarker + " changed=false failed=false windows=0 -->\n"},
		{&Result{Clusters: []*Cluster{{Path: "clusters/dev", Change: Changed, Kustomizations: []*Kustomization{{Ref: "a/b", Change: Changed, Fail: "x"}}}}}, MarkdownMarker + " changed=true failed=true windows=0 -->\n"},
	} {
		if md := markdownOf(t, tc.r, MarkdownOptions{}); !strings.HasPrefix(md, tc.want) {
			t.Errorf("want %q first, got:\n%s", tc.want, md)
		}
	}
}

func TestDiffMarkdownFence(t *testing.T) {
	for _, tc := range []struct{ in, fence string }{
		{"a\n", "```"}, {"``\n", "```"}, {"```\n", "````"}, {"x ````` y\n", "``````"},
	} {
		got := fence("diff", tc.in)
		if !strings.HasPrefix(got, tc.fence+"diff\n") || !strings.HasSuffix(got, "\n"+tc.fence+"\n") {
			t.Errorf("fence(%q) = %q, want the fence %q", tc.in, got, tc.fence)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"a", "`a`"}, {"a`b", "``a`b``"}, {"`a", "`` `a ``"},
	} {
		if got := code(tc.in); got != tc.want {
			t.Errorf("code(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestDiffMarkdownFill (issue 56 item 5): a summary that fits with room to
// spare while every section's object lines do not is no "summary alone":
// the sections are shown in order while they fit (whole where they can),
// the rest counted; only a summary over the limit itself is cut alone.
func TestDiffMarkdownFill(t *testing.T) {
	r := bigResult(1, 1)
	c := r.Clusters[0]
	for i := 0; i < 400; i++ {
		k := &Kustomization{Ref: fmt.Sprintf("flux-system/app-%03d", i), Change: Changed, Prune: true}
		for j := 0; j < 5; j++ {
			k.Objects = append(k.Objects, &Object{Key: ObjectKey{Kind: "ConfigMap", Namespace: "default", Name: fmt.Sprintf("cm-%03d-%d-%s", i, j, strings.Repeat("n", 40))}, Change: Changed, Action: "updated", Diff: "+  a: b\n"})
		}
		c.Kustomizations = append(c.Kustomizations, k)
	}
	const limit = 60000
	md := markdownOf(t, r, MarkdownOptions{Limit: limit})
	if len(md) > limit || len(md) < limit*3/4 {
		t.Fatalf("%d bytes: want the room under %d used", len(md), limit)
	}
	fenceBalance(t, md)
	if strings.Contains(md, "no diff is shown") || !strings.Contains(md, "more section(s) not shown") || !strings.Contains(md, "cm-000-0-") {
		t.Errorf("want the first sections shown and the rest counted:\n%s", md[:2000])
	}
	// The summary itself over the limit: cut alone (the negative).
	if md := markdownOf(t, r, MarkdownOptions{Limit: 3000}); !strings.Contains(md, "no diff is shown") || len(md) > 3000 {
		t.Errorf("a summary over the limit: want it cut alone, %d bytes", len(md))
	}
}
