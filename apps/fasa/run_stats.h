// What `fasa run` says on stderr after a generation: timing, memory, the KV rows and bytes the
// policy read, the file tier's reads, the online calibration, and a one-line summary.
#pragma once

#include "fasa/engine/generate.h"
#include "fasa/engine/session.h"
#include "fasa/model/model.h"

namespace fasa::cli {

void print_run_stats(const Model& model, Session& session, const GenerateResult& r);

}  // namespace fasa::cli
