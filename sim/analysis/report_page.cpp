#include "sim/analysis/report_page.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace stalesim {

namespace {

using nlohmann::json;

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

const json* at(const json& j, const char* ptr) {
  const json::json_pointer p(ptr);
  return j.is_object() && j.contains(p) && !j.at(p).is_null() ? &j.at(p) : nullptr;
}

std::string text_of(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return fmt::format("{:g}", v.get<double>());
  return v.dump();
}

std::string cell(const json& summary, const char* ptr, const char* f = "{:.4g}") {
  const json* v = at(summary, ptr);
  if (!v) return "-";
  if (v->is_number()) return fmt::format(fmt::runtime(f), v->get<double>());
  return text_of(*v);
}

// "SSP (staleness 3)": the type in capitals and the policy's numeric fields, as resolved.
std::string policy_words(const json& p) {
  std::string upper;
  for (char c : p.value("type", std::string("?")))
    upper += static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  std::string fields;
  for (const auto& [key, value] : p.items())
    if (value.is_number()) fields += fmt::format("{}{} {}", fields.empty() ? "" : ", ", key, text_of(value));
  return fields.empty() ? upper : fmt::format("{} ({})", upper, fields);
}

}  // namespace

std::string base64(const std::string& bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) |
                       (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i < bytes.size()) {
    unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string scenario_in_words(const json& s) {
  std::vector<std::string> parts;
  if (const json* workers = at(s, "/cluster/workers"); workers && workers->is_array()) {
    std::map<std::string, long> count;
    std::vector<std::string> order;
    long total = 0;
    for (const auto& w : *workers) {
      const std::string profile = w.value("profile", std::string("?"));
      const long n = w.value("count", 1L);
      if (!count.contains(profile)) order.push_back(profile);
      count[profile] += n;
      total += n;
    }
    std::string kinds;
    for (const auto& p : order) kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", count[p], p);
    parts.push_back(fmt::format("{} workers ({})", total, kinds));
  }
  if (const json* n = at(s, "/cluster/network"); n && n->is_object()) {
    std::string net = fmt::format("a {} network", n->value("topology", std::string("star")));
    if (const json* bw = at(*n, "/bandwidth_gbps")) net += fmt::format(" of {} Gbit/s", text_of(*bw));
    if (const json* lat = at(*n, "/latency_us")) net += fmt::format(" with {} µs latency", text_of(*lat));
    parts.push_back(net);
  }
  if (const json* p = at(s, "/policy")) parts.push_back("policy " + policy_words(*p));
  if (const json* o = at(s, "/optimizer"); o && o->is_object()) {
    std::string rule = fmt::format("rule {}", o->value("rule", std::string("sgd")));
    if (const json* lr = at(*o, "/lr")) rule += fmt::format(", lr {}", text_of(*lr));
    if (const json* b = at(*o, "/batch_size")) rule += fmt::format(", batch {}", text_of(*b));
    if (const json* m = at(*o, "/momentum"); m && m->is_number() && m->get<double>() != 0)
      rule += fmt::format(", momentum {}", text_of(*m));
    if (const json* a = at(*o, "/aggregate")) rule += fmt::format(", aggregate {}", text_of(*a));
    parts.push_back(rule);
  }
  if (const json* d = at(s, "/data/dataset")) parts.push_back(fmt::format("data {}", text_of(*d)));
  if (const json* m = at(s, "/model/type")) {
    std::string model = fmt::format("model {}", text_of(*m));
    if (const json* h = at(s, "/model/hidden")) model += fmt::format(" {}", h->dump());
    if (const json* c = at(s, "/model/cost")) model += fmt::format(", cost {}", text_of(*c));
    parts.push_back(model);
  }
  std::vector<std::string> stops;
  if (const json* t = at(s, "/stop/virtual_time_s"))
    stops.push_back(fmt::format("{} s of virtual time", text_of(*t)));
  if (const json* u = at(s, "/stop/max_updates")) stops.push_back(fmt::format("{} updates", text_of(*u)));
  if (!stops.empty()) {
    std::string stop = "stops at " + stops[0];
    for (size_t i = 1; i < stops.size(); ++i) stop += " or " + stops[i];
    parts.push_back(stop);
  }
  if (const json* t = at(s, "/stop/target_accuracy"))
    parts.push_back(fmt::format("target test accuracy {}", text_of(*t)));
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

std::string report_html(const std::string& title, const std::vector<std::string>& inputs,
                        const std::vector<ReportSection>& sections) {
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data: 'self'; "
       "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n";
  h += fmt::format("<title>{}</title>\n", escape(title));
  h += R"(<style>
body { font-family: sans-serif; margin: 1.5em auto; max-width: 1120px; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; border-top: 1px solid #ccc; padding-top: .6em; } h3 { font-size: 1.05em; }
table { border-collapse: collapse; font-size: .85em; margin: .5em 0; }
th, td { border: 1px solid #ccc; padding: .2em .5em; text-align: right; } th { background: #f3f3f3; }
td:first-child, th:first-child { text-align: left; }
figure { margin: .8em 0; } figure img { width: 100%; display: block; } figcaption { font-size: .85em; color: #444; }
.timelines img { width: 1100px; max-width: 100%; }
pre { font-size: .8em; background: #f7f7f7; padding: .5em; overflow-x: auto; }
.log { display: none; } body.logscale .log { display: block; } body.logscale .linear { display: none; }
#selfcheck { display: none; }
</style>
</head>
<body>
)";
  h += fmt::format("<h1>{}</h1>\n<p>stalesim report of ", escape(title));
  for (size_t i = 0; i < inputs.size(); ++i)
    h += fmt::format("{}<code>{}</code>", i ? ", " : "", escape(inputs[i]));
  h += ". Virtual time throughout; every figure is also a PNG beside this page.</p>\n";
  h += "<p><label><input type=\"checkbox\" id=\"logscale\"> staleness over time on a logarithmic "
       "axis</label></p>\n";
  for (const auto& s : sections) {
    h += fmt::format("<section id=\"{}\">\n<h2>{}</h2>\n", escape(s.id), escape(s.title));
    std::vector<std::string> words;
    for (const auto& r : s.runs) {
      const json* sc = at(r.summary, "/manifest/scenario");
      const std::string w = sc ? scenario_in_words(*sc) : std::string("(no scenario in summary.json)");
      bool seen = false;
      for (const auto& x : words) seen = seen || x == w;
      if (!seen) words.push_back(w);
    }
    h += "<h3>Scenario</h3>\n<ul>\n";
    for (const auto& r : s.runs) {
      const json* sc = at(r.summary, "/manifest/scenario");
      const std::string w = sc ? scenario_in_words(*sc) : std::string("(no scenario in summary.json)");
      auto it = std::find(words.begin(), words.end(), w);
      if (it == words.end()) continue;  // said already for an earlier run
      h += fmt::format("<li><b>{}</b>: {}.</li>\n", escape(r.label), escape(w));
      words.erase(it);
    }
    h += "</ul>\n<h3>Comparison</h3>\n<table>\n<tr><th>run</th><th>seed</th><th>status</th><th>virtual time "
         "(s)</th>"
         "<th>server updates</th><th>final test accuracy</th><th>time to target (s)</th><th>staleness "
         "mean</th>"
         "<th>staleness max</th><th>missed updates mean</th><th>mean wait fraction</th></tr>\n";
    for (const auto& r : s.runs) {
      double wait = 0;
      size_t n = 0;
      if (const json* ws = at(r.summary, "/workers"); ws && ws->is_array())
        for (const auto& w : *ws)
          if (w.contains("wait_fraction") && w["wait_fraction"].is_number()) {
            wait += w["wait_fraction"].get<double>();
            ++n;
          }
      const bool has_target = at(r.summary, "/manifest/scenario/stop/target_accuracy") != nullptr;
      h += fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</"
          "td><td>{}</td>"
          "<td>{}</td><td>{}</td></tr>\n",
          escape(r.label), escape(cell(r.summary, "/manifest/seed", "{:.0f}")),
          escape(cell(r.summary, "/status")), escape(cell(r.summary, "/virtual_time_s")),
          escape(cell(r.summary, "/server_updates", "{:.0f}")),
          escape(cell(r.summary, "/final/test_accuracy")),
          escape(at(r.summary, "/time_to_target_s") ? cell(r.summary, "/time_to_target_s")
                 : has_target                       ? std::string("missed")
                                                    : std::string("no target")),
          escape(cell(r.summary, "/staleness/mean")), escape(cell(r.summary, "/staleness/max", "{:.0f}")),
          escape(cell(r.summary, "/missed_updates/mean")),
          n ? fmt::format("{:.3f}", wait / static_cast<double>(n)) : "-");
    }
    h += "</table>\n";
    if (!s.comparison.empty())
      h += fmt::format("<h3>Differences over seeds</h3>\n<pre>{}</pre>\n", escape(s.comparison));
    const auto figures = [&](const char* heading, auto pick, const char* div_class) {
      std::string block;
      for (const auto& f : s.figures)
        if (pick(f.kind)) {
          const std::string cls = f.kind == "staleness-time-log" ? " class=\"log\""
                                  : f.kind == "staleness-time"   ? " class=\"linear\""
                                                                 : "";
          block += fmt::format(
              "<figure{}><img class=\"{}\" src=\"data:image/png;base64,{}\" alt=\"{}\"><figcaption>{} "
              "<a href=\"{}\">{}</a></figcaption></figure>\n",
              cls, escape(f.kind), base64(f.png), escape(f.caption), escape(f.caption), escape(f.file),
              escape(f.file));
        }
      if (!block.empty())
        h += fmt::format("<h3>{}</h3>\n<div class=\"{}\">\n{}</div>\n", heading, div_class, block);
    };
    figures(
        "Timelines", [](const std::string& k) { return k == "timeline"; }, "timelines");
    figures(
        "Staleness", [](const std::string& k) { return k == "staleness"; }, "staleness");
    figures(
        "Staleness over time", [](const std::string& k) { return k.rfind("staleness-time", 0) == 0; },
        "staleness-time");
    figures(
        "Accuracy", [](const std::string& k) { return k == "accuracy"; }, "accuracy");
    h += "</section>\n";
  }
  h += R"(<pre id="selfcheck"></pre>
<script>
document.getElementById('logscale').addEventListener('change', function (e) {
  document.body.classList.toggle('logscale', e.target.checked);
});
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var broken = imgs.filter(function (i) { return !i.complete || i.naturalWidth === 0; }).length;
  var tl = Array.prototype.slice.call(document.querySelectorAll('img.timeline'));
  var widths = tl.map(function (i) { return [Math.round(i.getBoundingClientRect().width), i.naturalWidth]; });
  document.getElementById('selfcheck').textContent =
      JSON.stringify({images: imgs.length, broken: broken, timeline_widths: widths});
});
</script>
</body>
</html>
)";
  return h;
}

}  // namespace stalesim
