package verify_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Two gates of a phase "controllers", declared once.
var (
	argsKept = verify.Def{ID: "overlay.args-preserved", Phase: "controllers", Stage: verify.Before, Title: "generated container args kept"}
	strict   = verify.Def{ID: "controllers.strict-substitution", Phase: "controllers", Stage: verify.Before, Title: "undefined ${VAR} fails"}
)

// report is a run whose second gate failed.
func report() *verify.Report {
	r := verify.NewReport("render")
	r.Add(
		argsKept.Pass("every generated arg is still there"),
		strict.Fail("StrictPostBuildSubstitutions=false: append --feature-gates=StrictPostBuildSubstitutions=true",
			"image ghcr.io/fluxcd/kustomize-controller:v1.4.0"),
	)
	return r
}

// Build a report from checks and read its verdict, per phase and overall.
func ExampleReport() {
	r := report()
	for _, p := range r.Phases() {
		fmt.Printf("%s: %s (%d pass, %d fail)\n", p.Name, p.Verdict, p.Pass, p.Fail)
	}
	fmt.Println(r.Verdict())
	// Output:
	// controllers: fail (1 pass, 1 fail)
	// fail
}

// The text report a person reads, with the evidence of what failed.
func ExampleWriteText() {
	r := report()
	// The exit code is the program's decision, carried into the summary
	// line (bootstrap's: a failed check is 1).
	r.ExitCode = 1
	if err := verify.WriteText(os.Stdout, r); err != nil {
		log.Fatal(err)
	}
	// Output:
	// PASS  controllers/before  overlay.args-preserved: every generated arg is still there
	// FAIL  controllers/before  controllers.strict-substitution: StrictPostBuildSubstitutions=false: append --feature-gates=StrictPostBuildSubstitutions=true
	//         image ghcr.io/fluxcd/kustomize-controller:v1.4.0
	// render: FAIL (1 pass, 1 fail, 0 warn, 0 skip; exit 1)
}

// The report as one JSON document, for programs.
func ExampleWriteJSON() {
	var b bytes.Buffer
	if err := verify.WriteJSON(&b, report()); err != nil {
		log.Fatal(err)
	}
	var doc struct {
		Verdict string
		Checks  []struct{ ID, Verdict string }
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		log.Fatal(err)
	}
	fmt.Println(doc.Verdict)
	for _, c := range doc.Checks {
		fmt.Println(c.ID, c.Verdict)
	}
	// Output:
	// fail
	// overlay.args-preserved pass
	// controllers.strict-substitution fail
}

// The report as JUnit XML, for CI: one suite per phase, one case per check.
func ExampleWriteJUnit() {
	if err := verify.WriteJUnit(os.Stdout, report()); err != nil {
		log.Fatal(err)
	}
	// Output:
	// <?xml version="1.0" encoding="UTF-8"?>
	// <testsuites name="bootstrap render" tests="2" failures="1" errors="0" skipped="0">
	//   <testsuite name="controllers" tests="2" failures="1" errors="0" skipped="0">
	//     <testcase name="overlay.args-preserved" classname="controllers.before">
	//       <properties>
	//         <property name="verdict" value="pass"></property>
	//         <property name="title" value="generated container args kept"></property>
	//       </properties>
	//       <system-out>every generated arg is still there&#xA;</system-out>
	//     </testcase>
	//     <testcase name="controllers.strict-substitution" classname="controllers.before">
	//       <properties>
	//         <property name="verdict" value="fail"></property>
	//         <property name="title" value="undefined ${VAR} fails"></property>
	//       </properties>
	//       <failure message="StrictPostBuildSubstitutions=false: append --feature-gates=StrictPostBuildSubstitutions=true">image ghcr.io/fluxcd/kustomize-controller:v1.4.0</failure>
	//     </testcase>
	//   </testsuite>
	// </testsuites>
}
