#pragma once
// The page of `stalesim report` (tools/cmd_report.cpp): one self-contained HTML file. Its images
// are inlined (data: URIs of the PNGs plots/report_figures.py drew) and its one script and style
// are inline; a Content-Security-Policy forbids every other source, so the page loads nothing
// over the network (tests/browser/report_browser_test.py checks it in headless Chromium).
//
// Per section: the scenarios in words (cluster, network, policy, rule), a table of the runs, the
// timelines one under the other at one width, the staleness distribution, staleness over time
// (linear, or logarithmic with the page's switch), test accuracy with bands, and, for a sweep
// compared with --compare, the differences over seeds with their standard errors and verdicts.
// The inline script also measures the page once loaded and writes the result as JSON into
// <pre id="selfcheck">: {"images", "broken", "timeline_widths"} (what the browser test reads).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace stalesim {

struct ReportFigure {
  std::string file;  // beside the page
  std::string kind;  // timeline, staleness, staleness-time, staleness-time-log, accuracy
  std::string caption;
  std::string png;  // the file's bytes
};

struct ReportRun {
  std::string folder;
  std::string label;
  nlohmann::json summary;  // its summary.json
};

struct ReportSection {
  std::string id, title;
  std::vector<ReportRun> runs;
  std::vector<ReportFigure> figures;
  std::string comparison;  // summarize --compare's table for a sweep, or ""
};

// A scenario (summary.json's manifest.scenario) in one paragraph of words: "4 workers (1 gtx1060,
// 3 gtx1080ti) on a star network of 10 Gbit/s with 50 µs latency; policy SSP (s = 3); rule sgd,
// lr 0.1, batch 32; data blobs; model mlp [64]; stops at 1 s of virtual time". Fields missing from
// the object are left out.
std::string scenario_in_words(const nlohmann::json& scenario);

// The page. `title` heads it; `inputs` are the folders given, named in the header.
std::string report_html(const std::string& title, const std::vector<std::string>& inputs,
                        const std::vector<ReportSection>& sections);

// RFC 4648 base64 of `bytes`.
std::string base64(const std::string& bytes);

}  // namespace stalesim
