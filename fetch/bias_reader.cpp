#include "bias_reader.h"

#include "errors.h"
#include "receipts.h"

namespace atlas {

std::vector<BiasTensor> readBiases(ByteSource &source, const BiasFetchPlan &plan)
{
    std::vector<RangeRequest> requests;
    for (const auto &r : plan.ranges)
        requests.push_back({r.file, r.offset, r.length});
    const auto answers = requests.empty() ? std::vector<RangeAnswer>() : source.readRanges(requests);
    std::vector<BiasTensor> out(plan.items.size());
    for (std::size_t k = 0; k < plan.ranges.size(); ++k) {
        const auto &range = plan.ranges[k];
        if (answers[k].bytes.size() != range.length)
            throw AtlasError(ErrorKind::Invalid, range.file + ": the file ends before byte " +
                                                     std::to_string(range.offset + range.length) +
                                                     " (bias tensors)");
        for (std::size_t i : range.items) {
            const auto &item = plan.items[i];
            BiasTensor &t = out[i];
            t.layer = item.layer;
            t.tensor = item.tensor;
            t.dtype = item.dtype;
            t.shape = item.shape;
            t.raw = answers[k].bytes.substr(item.fileOffset - range.offset, item.length);
            t.sha256 = sha256Hex(t.raw);
        }
    }
    for (std::size_t i = 0; i < plan.items.size(); ++i)
        if (plan.items[i].length == 0) {
            out[i].layer = plan.items[i].layer;
            out[i].tensor = plan.items[i].tensor;
            out[i].dtype = plan.items[i].dtype;
            out[i].shape = plan.items[i].shape;
            out[i].sha256 = sha256Hex({});
        }
    return out;
}

} // namespace atlas
