// How the Markdown reports (a sweep's results.md, `eval compare`'s tables) name the files a run
// read: by file name alone, never by a path of the machine that ran it (the report travels; its
// sha256s identify the files). The JSON results keep the paths, which tools read.
#pragma once

#include <string>

namespace fasa {

// "/home/u/models/m.gguf" -> "m.gguf", "tasks.jsonl" -> "tasks.jsonl", "online" -> "online";
// "" -> "-" (none).
std::string report_file_name(const std::string& path);

}  // namespace fasa
