// The page `rdmaemu ui` serves at /, from ui_page.html (HTML, CSS and the script that polls
// /status.json and /timeline.svg), built into the binary so the command needs no files.
#pragma once

namespace rdmaemu {

const char* ui_page();

} // namespace rdmaemu
