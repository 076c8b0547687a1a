package check

// detChartSource is the [chart-source] row of the table of detectors.
var detChartSource = detector{ID: ChartSource, Gate: Graph, Advisory: false,
	Short: "HelmRelease whose chart source is invalid or not rendered by the environment",
	Rule:  "helm-controller v1.6.4 (HelmRelease v2 API: spec.chart and spec.chartRef are mutually exclusive; a chart source not found is never installed)",
}
