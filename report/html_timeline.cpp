// The timeline of a site's worst call, drawn as inline SVG for the HTML report: what the analysis decided about
// the call (SiteTimeline, made by aggregate()), placed in time. Nothing is judged here.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>

#include "report/html_parts.h"

namespace asynccheck::report {
namespace {

constexpr double kWidth = 760;       // the SVG's width; it scales down with the page
constexpr double kLabelWidth = 110;  // lane names on the left
constexpr double kPlotRight = 34;    // room right of the plot, for the last tick's label
constexpr double kCharWidth = 6.2;   // about, at the 11px the labels are drawn in
constexpr double kTop = 6, kLaneHeight = 18, kLaneStep = 26;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// A tick step of 1, 2 or 5 times a power of ten, giving 4 to 10 ticks over `span` ns.
uint64_t tick_step(uint64_t span) {
  uint64_t step = 1;
  while (true) {
    for (uint64_t m : {1, 2, 5}) {
      if (span / (step * m) <= 8) return step * m;
    }
    step *= 10;
  }
}

std::string signed_duration(int64_t ns) {
  if (ns == 0) return "0";
  return (ns < 0 ? "-" : "+") + format_duration(static_cast<uint64_t>(ns < 0 ? -ns : ns));
}

std::string_view role_class(TimelineWork::Role r) {
  switch (r) {
    case TimelineWork::Role::Released: return "released";
    case TimelineWork::Role::QueuedBehind: return "behind";
    case TimelineWork::Role::StillRunning: return "running";
    case TimelineWork::Role::HeldBack: return "heldback";
  }
  return "released";
}

std::string_view role_text(TimelineWork::Role r) {
  switch (r) {
    case TimelineWork::Role::Released: return "GPU work it waited for";
    case TimelineWork::Role::QueuedBehind: return "work that held up the work it waited for";
    case TimelineWork::Role::StillRunning: return "work still running when it returned (not waited for)";
    case TimelineWork::Role::HeldBack: return "GPU work held back by the legacy stream";
  }
  return "";
}

}  // namespace

TimelineLayout layout_timeline(const SiteTimeline& t) {
  TimelineLayout l;
  const uint64_t held = std::max<uint64_t>(t.end_ns - t.start_ns, 1);
  // The call fills most of the plot; work that began or ended long before or after it is clipped at one call's
  // length beyond it, so that a wait at the end of a long kernel still shows the call.
  const uint64_t pad = std::max<uint64_t>(held / 10, 1);
  uint64_t lo = t.start_ns > pad ? t.start_ns - pad : 0, hi = t.end_ns + pad;
  const uint64_t lo_limit = t.start_ns > held ? t.start_ns - held : 0, hi_limit = t.end_ns + held;
  for (const TimelineWork& w : t.work) {
    lo = std::min(lo, std::max(w.start_ns, lo_limit));
    hi = std::max(hi, std::min(w.end_ns, hi_limit));
  }
  l.window_start_ns = lo;
  l.window_end_ns = hi;
  l.plot_left = kLabelWidth;
  l.plot_width = kWidth - kLabelWidth - kPlotRight;
  const double scale = l.plot_width / static_cast<double>(hi - lo);
  auto bar = [&](uint64_t a, uint64_t b) {
    a = std::clamp(a, lo, hi);
    b = std::clamp(b, lo, hi);
    if (b <= a) return TimelineLayout::Bar{l.plot_left + static_cast<double>(a - lo) * scale, 0};
    return TimelineLayout::Bar{l.plot_left + static_cast<double>(a - lo) * scale, static_cast<double>(b - a) * scale};
  };
  l.call = bar(t.start_ns, t.end_ns);
  l.waited = bar(t.wait_start_ns, t.wait_end_ns);
  l.own_before = bar(t.start_ns, t.wait_end_ns > t.wait_start_ns ? t.wait_start_ns : t.end_ns);
  l.own_after = t.wait_end_ns > t.wait_start_ns ? bar(t.wait_end_ns, t.end_ns) : bar(t.end_ns, t.end_ns);
  for (const TimelineWork& w : t.work) l.work.push_back(bar(w.start_ns, w.end_ns));
  return l;
}

std::string timeline_svg(const SiteTimeline& t, std::string_view call, bool gpu_side) {
  const TimelineLayout l = layout_timeline(t);
  std::map<uint32_t, size_t> lane;  // stream -> lane (1, 2, ...); lane 0 is the host thread
  for (const TimelineWork& w : t.work) lane.emplace(w.stream, 0);
  size_t next = 1;
  for (auto& [stream, n] : lane) n = next++;
  const double lanes_bottom = kTop + static_cast<double>(next - 1) * kLaneStep + kLaneHeight;
  const double axis_y = lanes_bottom + 8;
  std::vector<std::pair<std::string, std::string>> legend;  // (class, text)
  const uint64_t held = t.end_ns - t.start_ns, waited = t.wait_end_ns - t.wait_start_ns;
  if (gpu_side) {
    legend.emplace_back("call", "the call (the host was not held)");
  } else {
    legend.emplace_back("waited", "waited for GPU work: " + format_duration(waited));
    legend.emplace_back("own", "own cost: " + format_duration(held - waited));
  }
  for (const TimelineWork& w : t.work) {
    const std::string c(role_class(w.role));
    if (std::none_of(legend.begin(), legend.end(), [&](const auto& e) { return e.first == c; }))
      legend.emplace_back(c, std::string(role_text(w.role)));
  }
  const double legend_y = axis_y + 32;
  const double height = legend_y + static_cast<double>((legend.size() + 2) / 3) * 16 + 4;
  std::string s = "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + num(kWidth) + " " +
                  num(height) + "\" width=\"" + num(kWidth) + "\" height=\"" + num(height) +
                  "\" role=\"img\" data-held-ns=\"" + std::to_string(held) + "\" data-waited-ns=\"" +
                  std::to_string(gpu_side ? 0 : waited) + "\" data-own-ns=\"" +
                  std::to_string(gpu_side ? 0 : held - waited) + "\">";
  s += "<title>" + html_escape(call) + " on host thread " + std::to_string(t.thread) + ": held " +
       format_duration(held) + "</title>";
  auto lane_y = [&](size_t n) { return kTop + static_cast<double>(n) * kLaneStep; };
  auto rect = [&](std::string_view cls, const TimelineLayout::Bar& b, double y, const std::string& title) {
    s += "<rect class=\"" + std::string(cls) + "\" x=\"" + num(b.x) + "\" y=\"" + num(y) + "\" width=\"" +
         num(b.width) + "\" height=\"" + num(kLaneHeight) + "\"><title>" + html_escape(title) + "</title></rect>";
  };
  auto label = [&](double x, double y, std::string_view anchor, std::string_view cls, const std::string& text) {
    s += "<text class=\"" + std::string(cls) + "\" x=\"" + num(x) + "\" y=\"" + num(y) + "\" text-anchor=\"" +
         std::string(anchor) + "\">" + html_escape(text) + "</text>";
  };
  // Lanes: the host thread, then one per stream.
  label(kLabelWidth - 6, lane_y(0) + 13, "end", "lane", "host thread " + std::to_string(t.thread));
  for (const auto& [stream, n] : lane)
    label(kLabelWidth - 6, lane_y(n) + 13, "end", "lane", "stream " + std::to_string(stream));
  // The call: its own cost and its waited part, filled differently (a GPU-side finding: one plain bar).
  const std::string held_text = std::string(call) + ": held the host " + format_duration(held);
  if (gpu_side) {
    rect("call", l.call, lane_y(0), held_text);
  } else {
    if (l.own_before.width > 0) rect("own", l.own_before, lane_y(0), "own cost, " + held_text);
    if (l.waited.width > 0) rect("waited", l.waited, lane_y(0), "waited " + format_duration(waited) + " for GPU work");
    if (l.own_after.width > 0) rect("own", l.own_after, lane_y(0), "own cost, " + held_text);
  }
  // A bar's name goes inside it where it fits, else beside it where there is room, else only in its tooltip.
  const double plot_right = l.plot_left + l.plot_width;
  auto place_label = [&](const TimelineLayout::Bar& b, double y, const std::string& text, std::string_view cls,
                         bool filled) {
    const double width = static_cast<double>(text.size()) * kCharWidth;
    if (filled && b.width >= width + 8)
      label(b.x + 4, y + 13, "start", std::string(cls) + " inside", text);
    else if (kWidth - (b.x + b.width) >= width + 6)
      label(b.x + b.width + 4, y + 13, "start", cls, text);
    else if (b.x - l.plot_left >= width + 6)
      label(b.x - 4, y + 13, "end", cls, text);
  };
  // The work, each piece on its stream's lane.
  for (size_t i = 0; i < t.work.size(); ++i) {
    const TimelineWork& w = t.work[i];
    const TimelineLayout::Bar& b = l.work[i];
    const double y = lane_y(lane[w.stream]);
    std::string text = w.what + ", " + format_duration(w.end_ns - w.start_ns);
    if (w.start_ns < l.window_start_ns)
      text += ", began " + format_duration(t.start_ns - w.start_ns) + " before the call";
    rect("work " + std::string(role_class(w.role)), b, y, text + " (" + std::string(role_text(w.role)) + ")");
    place_label(b, y, text, "work-label", w.role != TimelineWork::Role::StillRunning);  // that one is an outline
  }
  // The return, across every lane, and the call's name on its bar.
  const double ret_x = l.call.x + l.call.width;
  s += "<line class=\"return\" x1=\"" + num(ret_x) + "\" y1=\"" + num(kTop - 4) + "\" x2=\"" + num(ret_x) + "\" y2=\"" +
       num(lanes_bottom + 2) + "\"><title>the call returned</title></line>";
  place_label(l.call, lane_y(0), std::string(call) + " " + format_duration(held), "call-label", true);
  // The axis: time from the call's entry, ticks of 1, 2 or 5 units.
  s += "<line class=\"axis\" x1=\"" + num(l.plot_left) + "\" y1=\"" + num(axis_y) + "\" x2=\"" + num(plot_right) +
       "\" y2=\"" + num(axis_y) + "\"/>";
  const uint64_t span = l.window_end_ns - l.window_start_ns;
  const auto step = static_cast<int64_t>(tick_step(span));
  const int64_t from = static_cast<int64_t>(l.window_start_ns) - static_cast<int64_t>(t.start_ns);
  const int64_t to = static_cast<int64_t>(l.window_end_ns) - static_cast<int64_t>(t.start_ns);
  int64_t tick = from >= 0 ? (from + step - 1) / step * step : -(-from / step * step);
  for (; tick <= to; tick += step) {
    const double x = l.plot_left + static_cast<double>(tick - from) / static_cast<double>(span) * l.plot_width;
    s += "<line class=\"tick\" x1=\"" + num(x) + "\" y1=\"" + num(axis_y) + "\" x2=\"" + num(x) + "\" y2=\"" +
         num(axis_y + 4) + "\"/>";
    label(x, axis_y + 15, "middle", "tick-label", signed_duration(tick));
  }
  label(l.plot_left - 6, axis_y + 15, "end", "axis-label", "time from its entry");
  // The legend, three to a line.
  for (size_t i = 0; i < legend.size(); ++i) {
    const double x = 8 + static_cast<double>(i % 3) * 250, y = legend_y + static_cast<double>(i / 3) * 16;
    s += "<rect class=\"swatch " + legend[i].first + "\" x=\"" + num(x) + "\" y=\"" + num(y - 9) +
         "\" width=\"12\" height=\"10\"/>";
    label(x + 16, y, "start", "legend", legend[i].second);
  }
  return s + "</svg>";
}

}  // namespace asynccheck::report
