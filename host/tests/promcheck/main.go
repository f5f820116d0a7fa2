// Command promcheck reads one /metrics body on standard input and checks it
// with the parsers Prometheus itself uses, exiting 1 with every problem
// when they reject it (host/tests/cli/run.rs runs it on Herald's output):
//
//	promcheck text         the text format 0.0.4: expfmt's TextParser (what
//	                       Prometheus' client libraries and promtool read it
//	                       with), then promlint, what `promtool check
//	                       metrics` runs: help text, counter suffixes, base
//	                       units; every family must also have a TYPE.
//	promcheck openmetrics  OpenMetrics 1.0.0: the parser Prometheus scrapes
//	                       OpenMetrics with (model/textparse), then what that
//	                       lexer leaves to the exposer: each sample belongs to
//	                       the family its TYPE line declared (counter samples
//	                       end in _total, a histogram's in _bucket, _sum or
//	                       _count), and every family has HELP and TYPE.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: promcheck text|openmetrics < body")
		os.Exit(2)
	}
	body, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail([]string{err.Error()})
	}
	var problems []string
	switch os.Args[1] {
	case "text":
		problems = checkText(body)
	case "openmetrics":
		problems = checkOpenMetrics(body)
	default:
		fmt.Fprintln(os.Stderr, "usage: promcheck text|openmetrics < body")
		os.Exit(2)
	}
	if len(problems) > 0 {
		fail(problems)
	}
	fmt.Println("ok")
}

func fail(problems []string) {
	for _, problem := range problems {
		fmt.Fprintln(os.Stderr, problem)
	}
	os.Exit(1)
}

func checkText(body []byte) []string {
	var problems []string
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return []string{"text format 0.0.4: " + err.Error()}
	}
	if len(families) == 0 {
		return []string{"text format 0.0.4: no metric family"}
	}
	for name, family := range families {
		if family.GetType() == dto.MetricType_UNTYPED {
			problems = append(problems, fmt.Sprintf("%s: no TYPE (read as untyped)", name))
		}
	}
	lint, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		return append(problems, "promlint: "+err.Error())
	}
	for _, problem := range lint {
		problems = append(problems, fmt.Sprintf("promlint: %s: %s", problem.Metric, problem.Text))
	}
	return problems
}

// The sample-name suffixes each OpenMetrics type allows.
var suffixes = map[model.MetricType][]string{
	model.MetricTypeCounter:   {"_total", "_created"},
	model.MetricTypeGauge:     {""},
	model.MetricTypeHistogram: {"_bucket", "_sum", "_count", "_created"},
	model.MetricTypeSummary:   {"", "_sum", "_count", "_created"},
	model.MetricTypeInfo:      {"_info"},
	model.MetricTypeStateset:  {""},
	model.MetricTypeUnknown:   {""},
}

func checkOpenMetrics(body []byte) []string {
	var problems []string
	parser := textparse.NewOpenMetricsParser(body, labels.NewSymbolTable())
	family, kind := "", model.MetricTypeUnknown
	helped := map[string]bool{}
	typed := map[string]bool{}
	samples := 0
	for {
		entry, err := parser.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return append(problems, "OpenMetrics: "+err.Error())
		}
		switch entry {
		case textparse.EntryHelp:
			name, _ := parser.Help()
			helped[string(name)] = true
		case textparse.EntryType:
			name, t := parser.Type()
			family, kind = string(name), t
			typed[family] = true
		case textparse.EntrySeries:
			samples++
			var lset labels.Labels
			parser.Labels(&lset)
			name := lset.Get(labels.MetricName)
			belongs := false
			for _, suffix := range suffixes[kind] {
				belongs = belongs || name == family+suffix
			}
			if !belongs {
				problems = append(problems, fmt.Sprintf(
					"%s: not a sample of the family declared before it (%s, %s)", name, family, kind))
			}
			if !helped[family] {
				problems = append(problems, fmt.Sprintf("%s: family %s has no HELP", name, family))
			}
		}
	}
	for name := range typed {
		if !helped[name] {
			problems = append(problems, fmt.Sprintf("%s: no HELP", name))
		}
	}
	if samples == 0 {
		problems = append(problems, "OpenMetrics: no sample")
	}
	if !strings.HasSuffix(string(body), "# EOF\n") {
		problems = append(problems, "OpenMetrics: the body does not end with \"# EOF\\n\"")
	}
	return problems
}
