#include "runtime/gpu_placement.h"

#include <fmt/format.h>

#include <cstdlib>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.h"

namespace mw {
namespace {

// The matrices of layer il the GPU can take, by their GGUF names. Expert stacks stay on the CPU
// for now (their products are per expert slice).
std::vector<std::pair<std::string, const WeightMatrix*>> layer_matrices(const Layer& l,
                                                                        uint32_t il) {
    std::vector<std::pair<std::string, const WeightMatrix*>> out;
    for (const LayerMatrixRole& r : kLayerMatrices) {
        const WeightMatrix* w = &(l.*r.member);
        // The shared expert's one-row sigmoid gate stays on the CPU.
        if (w->data && r.member != &Layer::shared_router)
            out.push_back({fmt::format("blk.{}.{}", il, r.gguf), w});
    }
    return out;
}

}  // namespace

std::string cpu_device_refusal(const gpu::DeviceInfo& device, bool allowed) {
    if (device.type != "cpu") return "";
    if (allowed) return "";
    if (const char* env = std::getenv("MEMWALL_GPU_ALLOW_CPU_DEVICE");
        env && std::string_view(env) == "1")
        return "";
    return fmt::format(
        "the Vulkan device {} is a CPU (a software renderer, ~1000x slower than memwall's CPU "
        "path); --gpu-allow-cpu-device (or MEMWALL_GPU_ALLOW_CPU_DEVICE=1) offloads to it anyway",
        device.name);
}

GpuPlacement place_on_gpu(const Model& model, const std::string& path,
                          const GpuPlacementOptions& options) {
    GpuPlacement p;
    if (options.n_gpu_layers <= 0) return p;
    gpu::OffloadOptions oo = options.offload;
    oo.device = options.main_gpu;
    std::string why;
    // A device of type CPU is refused before it is opened (opening lavapipe takes ~100 ms).
    const gpu::Devices devices = gpu::list_devices();
    if (options.main_gpu >= 0 && size_t(options.main_gpu) < devices.devices.size())
        why =
            cpu_device_refusal(devices.devices[size_t(options.main_gpu)], options.allow_cpu_device);
    if (why.empty()) p.offload = gpu::Offload::create(oo, &why);
    if (!p.offload) {
        if (options.required) {
            fail(ErrorKind::unsupported, "{}: -ngl {} with --gpu-required: {}", path,
                 options.n_gpu_layers, why);
        }
        p.warning = fmt::format("no GPU offload, everything runs on the CPU: {}", why);
        p.summary = "; CPU only (no GPU)";
        p.report = "gpu: none: " + why + "\n";
        return p;
    }
    const uint32_t n_layer = model.hp.n_layer;
    const uint32_t n = std::min<uint32_t>(uint32_t(options.n_gpu_layers), n_layer);
    std::vector<std::string> stayed;
    uint32_t layers_whole = 0;
    const auto note_copy = [&](const WeightMatrix& w) {
        if (!p.offload->reads_host_bytes(w) && w.data != model.tok_embd.data)
            p.copied.push_back({w.data, uint64_t(w.n_rows) * w.row_bytes});
    };
    for (uint32_t il = n_layer - n; il < n_layer; ++il) {
        bool whole = !model.layers[il].moe;
        for (const auto& [name, w] : layer_matrices(model.layers[il], il)) {
            std::string reason;
            if (!p.offload->add(*w, &reason)) {
                stayed.push_back(fmt::format("{} ({}: {})", name, w->traits->name, reason));
                whole = false;
            } else {
                note_copy(*w);
            }
        }
        if (model.layers[il].moe) stayed.push_back(fmt::format("blk.{}.ffn_*_exps (experts)", il));
        layers_whole += whole ? 1 : 0;
    }
    bool output = false;
    if (uint32_t(options.n_gpu_layers) > n_layer && model.output.data) {
        std::string reason;
        output = p.offload->add(model.output, &reason);
        if (output) note_copy(model.output);
        if (!output)
            stayed.push_back(fmt::format("output ({}: {})", model.output.traits->name, reason));
    }
    const gpu::DeviceInfo& d = p.offload->device();
    const double mib = 1 << 20;
    const uint64_t bytes = p.offload->weight_bytes();
    const uint64_t copied = p.offload->copied_bytes();
    p.summary = fmt::format("; {} of {} layers{} on {} ({:.1f} MiB, {})", n, n_layer,
                            output ? " and the output" : "", d.name, double(bytes) / mib,
                            copied == 0 ? "the file's pages used in place"
                                        : fmt::format("{:.1f} MiB copied", double(copied) / mib));
    const uint64_t uploaded = p.offload->uploaded_bytes();
    p.report = fmt::format(
        "gpu: {} ({}, Vulkan {}{}): layers {}..{}{} offloaded, {} of them whole; {:.1f} MiB of "
        "weights on the device, {:.1f} MiB of it copied{}\n",
        d.name, d.type, d.api_version, d.unified ? ", unified memory" : "", n_layer - n,
        n_layer - 1, output ? " and the output" : "", layers_whole, double(bytes) / mib,
        double(copied) / mib,
        uploaded
            ? fmt::format(" ({:.1f} MiB uploaded to device-local memory)", double(uploaded) / mib)
            : "");
    if (!stayed.empty()) {
        p.report += fmt::format("gpu: {} matrices stay on the CPU:", stayed.size());
        for (const std::string& s : stayed) p.report += "\n  " + s;
        p.report += "\n";
        if (options.required) {
            fail(ErrorKind::unsupported, "{}: --gpu-required, but {} matrices stay on the CPU: {}",
                 path, stayed.size(), stayed.front());
        }
    }
    // The products on the device are the matrices; attention, norms and the rest run on the CPU.
    return p;
}

}  // namespace mw
