package customize

import (
	"context"
	"syscall"
	"testing"
)

// BenchmarkRender is a full step-1 render: six controllers (the homelab's
// extras) plus the shipped overlays and every gate. It reports the process's
// peak RSS as peak-RSS-MiB; the targets are < 1 s/op and < 200 MiB.
func BenchmarkRender(b *testing.B) {
	for _, version := range []string{"v2.9.5", "v2.4.0"} {
		b.Run(version, func(b *testing.B) {
			o := options(b, version, shipped(b), "overlays")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Run(context.Background(), o); err != nil {
					b.Fatal(err)
				}
			}
			var ru syscall.Rusage
			if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
				b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MiB")
			}
		})
	}
}
