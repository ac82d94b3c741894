#include "analysis/capture_range.h"

#include "analysis/events.h"

namespace asynccheck {

NvtxRangeMatch::NvtxRangeMatch(CaptureRange range, std::function<NvtxRange(uint32_t)> lookup)
    : range_(std::move(range)), lookup_(std::move(lookup)) {}

bool NvtxRangeMatch::inside(uint32_t id) {
  std::lock_guard lock(mu_);
  // Walks up to the first node already answered (or the outermost), then answers every node on the way: a node is
  // inside when it is the range, or its parent is inside.
  std::vector<std::pair<uint32_t, bool>> walked;
  int8_t answer = 0;
  for (uint32_t at = id; at != 0;) {
    if (at < known_.size() && known_[at] >= 0) {
      answer = known_[at];
      break;
    }
    const NvtxRange node = lookup_(at);
    const bool named =
        node.name == range_.name && (range_.any_domain || node.domain == range_.domain) && !node.name.empty();
    walked.emplace_back(at, named);
    // A parent is always a smaller id; anything else (a hand-made table) ends the walk.
    at = node.parent < at ? node.parent : 0;
  }
  for (auto it = walked.rbegin(); it != walked.rend(); ++it) {
    answer = static_cast<int8_t>(answer || it->second);
    if (it->first >= known_.size()) known_.resize(it->first + 1, -1);
    known_[it->first] = answer;
  }
  return id != 0 && (id < known_.size() ? known_[id] == 1 : answer == 1);
}

std::function<bool(uint32_t)> nvtx_range_test(const CaptureRange& range, std::function<NvtxRange(uint32_t)> lookup) {
  if (range.kind != CaptureRange::Kind::Nvtx) return {};
  auto match = std::make_shared<NvtxRangeMatch>(range, std::move(lookup));
  return [match](uint32_t id) { return match->inside(id); };
}

}  // namespace asynccheck
