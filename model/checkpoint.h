#pragma once

#include "model_config.h"
#include "safetensors.h"

#include <string>
#include <string_view>
#include <vector>

namespace atlas {

// Where a checkpoint was read from.
enum class SourceKind { Local, Hub, Https };
std::string_view sourceKindName(SourceKind kind); // "local", "hub", "https" (the report's words)

struct SourceInfo
{
    SourceKind kind = SourceKind::Local;
    std::string location; // path or URL, never with a token
    std::string revision; // as asked for (hub only)
    std::string commit;   // resolved commit (hub only)
};

// What the files are: safetensors shards with config.json, or GGUF files (their metadata read as config.json).
enum class CheckpointFormat { Safetensors, Gguf };

// Everything read from a checkpoint's headers: the raw material of every analysis.
struct Checkpoint
{
    SourceInfo source;
    CheckpointFormat format = CheckpointFormat::Safetensors;
    std::string ggufArchitecture; // general.architecture of a GGUF set
    bool hasConfig = false;
    ModelConfig config;
    std::vector<ShardHeader> shards;
    std::vector<std::string> warnings;

    std::size_t tensorCount() const;
    std::uint64_t tensorBytes() const;
    std::uint64_t headerBytes() const; // 8 + N over all shards
    bool synthetic() const;
};

} // namespace atlas
