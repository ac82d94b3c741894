// The pieces the HTML report (html.cpp) is made of, each in a file of its own: escaping, the timeline of a site's
// worst call, and the page's inline style and script. Declared here so that the tests can check each alone.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "report/report.h"

namespace asynccheck::report {

// Text from the program or a recording (names, paths, NVTX ranges, kernel names) made safe for HTML text and
// attribute values: invalid UTF-8 becomes U+FFFD, control characters are shown as \xHH (as the summary does), and
// & < > " ' become character references, so that no name can open a tag, close an attribute or a script.
std::string html_escape(std::string_view text);

// Where the bars of a timeline lie, in SVG user units: the part of the call that waited for GPU work, its own cost
// (before and after the waited part), and each piece of work, over a window around the call.
struct TimelineLayout {
  struct Bar {
    double x = 0, width = 0;
  };
  uint64_t window_start_ns = 0, window_end_ns = 0;  // the time the plot spans (work outside it is clipped)
  double plot_left = 0, plot_width = 0;             // where that window is drawn
  Bar call;                                         // the whole call, entry to return
  Bar waited;                                       // width 0: the call waited for nothing
  Bar own_before, own_after;                        // width 0: no own cost there
  std::vector<Bar> work;                            // per SiteTimeline::work, in its order
};
TimelineLayout layout_timeline(const SiteTimeline& t);

// The timeline of a site's worst call as inline SVG (html_timeline.cpp): its host thread, with the waited and own
// parts of the call filled differently, against the GPU work its evidence names, one lane per stream; a legend and
// a labelled time axis. `call` names the call on its bar ("cudaMemcpyAsync"); `gpu_side`: a legacy-stream finding,
// which held back GPU work and not the host.
std::string timeline_svg(const SiteTimeline& t, std::string_view call, bool gpu_side);

// The page's style sheet and script (html_assets.cpp): constant text, no data, so nothing the program named can
// end the <script> element. The script reads the table's data-* attributes.
extern const std::string_view kHtmlStyle;
extern const std::string_view kHtmlScript;

}  // namespace asynccheck::report
