// The strict half of model loading for metadata: every {arch}.* key of a file is either read by
// the engine (implemented), known to leave the math unchanged (with the reason), or accepted
// only at the value the engine assumes. Any other key may change the math, so the file is
// refused, naming the key.
#pragma once

#include <vector>

#include "fasa/model/arch.h"

namespace fasa {

class GgufFile;

// The keys an architecture's files may carry: those every architecture shares, then the row's.
std::vector<KnownKey> known_metadata_keys(const ArchInfo& arch);

// Throws fasa::Error naming every {arch}.* key that is not known, and every known key whose value
// would mean math the engine does not implement.
void check_metadata_keys(const GgufFile& f, const ArchInfo& arch);

}  // namespace fasa
