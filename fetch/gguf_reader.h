#pragma once

#include "byte_source.h"
#include "checkpoint.h"
#include "checkpoint_reader.h"

#include <string>
#include <vector>

namespace atlas {

// The GGUF files a selection names among `available` (a listing; empty when the source cannot list): a split
// set whole, in part order. Throws AtlasError naming what is missing or ambiguous: no file matches, several
// sets match (each named, with --gguf to choose), a part of a split is absent.
std::vector<std::string> chooseGgufFiles(const std::vector<std::string> &available, const GgufSelection &selection,
                                         const std::string &location);

// Whether a listing is of a GGUF repository: .gguf files and no safetensors checkpoint.
bool listsOnlyGguf(const std::vector<std::string> &available);

// Reads the headers of `files` through byte ranges only: a first range of every file at once (one round trip),
// then, for a header longer than that (a tokenizer's arrays), a range the parse estimates from what it read:
// two requests for a first file of 10 MB of metadata, one for the others. The metadata of the set's first file
// becomes config (ggufModelConfig); the parts of a split are checked against one another (split.no, split.count,
// split.tensors.count, names unique across files).
Checkpoint readGgufCheckpoint(ByteSource &source, const std::vector<std::string> &files, const ReadOptions &options);

} // namespace atlas
