// A timeline drawn: as text for a terminal, as SVG, and as a self-contained HTML page around
// the SVG (no scripts, no external files: a browser opens it from disk). At most `limit`
// events are drawn; the rest are counted in a last line.
#pragma once

#include "model.h"

#include <string>

namespace rdmaemu::timeline {

std::string render_text(const Timeline& t, size_t limit);
std::string render_svg(const Timeline& t, size_t limit);
std::string render_html(const Timeline& t, const std::string& title, size_t limit);

// The event's kind as a word: "verb", "wqe", "cqe", "cqe-error", "dma", "packet", "ack", "nak",
// "rnr-nak", "dropped", "warn" (the SVG's CSS classes, the text's tags).
const char* kind_name(EventKind k);

} // namespace rdmaemu::timeline
