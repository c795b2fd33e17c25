#include "plan/planner.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "base/error.h"
#include "format/gguf_writer.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/recurrent_state.h"
#include "net/remote_header.h"
#include "plan/catalogue.h"
#include "plan/device_cache.h"
#include "runtime/context.h"
#include "runtime/mtp.h"
#include "runtime/ple_reader.h"
#include "sys/mapped_file.h"
#include "sys/probe.h"
#include "sys/thread_pool.h"
#include "tensor/types.h"

namespace mw {
namespace {

constexpr double kGiB = double(1 << 30);

// Overhead of a running memwall process beyond weights, KV cache and compute buffers, fitted to
// the peak RSS of `memwall run` on the shared test models and of `memwall tokenize` on the test
// vocabularies (docs/plan.md): the process itself (code, libraries, allocator, thread pool), the
// vocabulary's tables per token and per BPE merge, a BPE tokenizer's fixed cost (compiled
// pre-tokenizer regexes, Unicode tables paged in), and the stack pages each thread touches.
// The code's share grows with the binary: the kernel maps up to 64 KiB of page cache around each
// page a process runs (fault-around), so a larger `memwall` has more of its text resident. The
// HTTP server's library (Debian's libmicrohttpd, linked with GnuTLS) adds its libraries' pages
// to every process; libcurl is opened only by the commands that download. (cpp-httplib, with
// OpenSSL, zlib and brotli, took 1 MiB more until issue 39.)
constexpr uint64_t kProcessBytes = kPlanProcessBytes;
constexpr uint64_t kVocabBytesPerToken = 150;
constexpr uint64_t kVocabBytesPerMerge = 48;
constexpr uint64_t kBpeFixedBytes = uint64_t(5) << 18;  // 1.25 MiB
constexpr uint64_t kThreadBytes = uint64_t(16) << 10;

bool starts_with(std::string_view s, std::string_view prefix) {
    return s.substr(0, prefix.size()) == prefix;
}

// 3.2e9 -> "2.98 GiB", 5e6 -> "4.8 MiB".
std::string gib(uint64_t bytes) {
    if (double(bytes) < kGiB) return fmt::format("{:.1f} MiB", double(bytes) / double(1 << 20));
    return fmt::format("{:.2f} GiB", double(bytes) / kGiB);
}

// The header of `file` as another recipe would write it. The vocabulary is left out (it does
// not change); the caller keeps the original header's size.
std::vector<uint8_t> requantized_header(const gguf::GgufFile& f, const HParams& hp,
                                        QuantRecipe recipe) {
    gguf::GgufWriter w(f.alignment());
    for (const gguf::KeyValue& kv : f.metadata()) {
        if (!starts_with(kv.key, "tokenizer.")) w.set_value(kv.key, kv.value);
    }
    w.set_u32("general.file_type", recipe_file_type(recipe));
    QuantModelInfo info;
    info.arch = hp.arch;
    info.n_layer = hp.n_layer;
    info.n_head = hp.n_head;
    info.n_head_kv = hp.n_head_kv;
    info.n_expert = hp.n_expert;
    info.has_output = f.find_tensor("output.weight") != nullptr;
    info.is_70b_class = model_is_70b_class(hp.arch, hp.n_layer, hp.n_head, hp.n_head_kv);
    for (const gguf::TensorInfo& t : f.tensors()) add_attn_v_tensor(info, t.name);
    for (const gguf::TensorInfo& t : f.tensors()) {
        const GgmlType type = tensor_type_for(recipe, info, t.name, t.n_dims, int64_t(t.ne[0]),
                                              static_cast<GgmlType>(t.type));
        w.add_tensor(t.name, type, std::vector<uint64_t>(t.ne, t.ne + t.n_dims),
                     gguf::GgufWriter::Producer{});
    }
    return w.header_bytes();
}

// A parsed header and the bytes it points into.
struct Header {
    std::vector<uint8_t> bytes;  // for written headers
    MappedFile file;             // for files
    gguf::GgufFile gguf;
};

Header parse_written(std::vector<uint8_t> bytes, const std::string& name) {
    Header h;
    h.bytes = std::move(bytes);
    h.gguf = gguf::GgufFile::parse(h.bytes, name, {.header_only = true});
    return h;
}

// Maps the file (nothing is read until touched) and parses its header only, without pointing at
// any tensor data, so that planning never reads weights: a partial download is enough.
Header parse_file_header(const std::string& path) {
    Header h;
    h.file = MappedFile::open(path);
    try {
        const gguf::GgufFile full =
            gguf::GgufFile::parse(h.file.bytes(), path, {.header_only = true});
        // A file cut off in the padding before its data has only the bytes that are there.
        const size_t end = size_t(std::min<uint64_t>(full.data_offset(), h.file.bytes().size()));
        h.gguf = gguf::GgufFile::parse(h.file.bytes().first(end), path, {.header_only = true});
    } catch (const Error& e) {
        fail(e.kind(),
             "{} (planning needs the whole GGUF header; a partial download must hold at "
             "least its first bytes up to the tensor data, usually a few MB; this file has {} "
             "bytes)",
             e.what(), h.file.file_size());
    }
    return h;
}

// Reads the header of a remote file with range requests and parses it as parse_file_header
// does (the bytes up to the tensor data); `remote` says what it cost.
Header parse_remote_header(const std::string& url, RemoteSource* remote) {
    net::RemoteHeader r = net::fetch_gguf_header(url);
    if (remote) {
        remote->url = r.file.name.url;
        remote->resolved_url = r.file.resolved_url;
        remote->file_bytes = r.file.size;
        remote->bytes_read = r.bytes_read;
        remote->requests = r.requests;
        remote->etag = r.file.etag;
        remote->sha256 = r.file.sha256;
    }
    return parse_written(std::move(r.bytes), url);
}

// The recipe a file says it was made with (general.file_type), else its mix of tensor types.
std::string file_type_label(const gguf::GgufFile& f, const ModelFacts& facts) {
    const uint32_t file_type = f.get_u32("general.file_type").value_or(UINT32_MAX);
    for (QuantRecipe r : all_recipes()) {
        if (recipe_file_type(r) == file_type) return recipe_name(r);
    }
    return facts.quant;
}

struct Variant {
    std::string label;
    bool file_type = false;
    ModelFacts facts;
};

PlanRow make_row(const std::string& model, const Variant& v, const DeviceProfile& dev,
                 RunSettings run) {
    if (run.n_threads <= 0 && dev.n_threads > 0) run.n_threads = dev.n_threads;
    PlanRow row;
    row.model = model;
    row.device = dev.id;
    row.quant = v.label;
    row.file_type = v.file_type;
    row.kv_type = run.type_k == run.type_v
                      ? kv_type_name(run.type_k)
                      : kv_type_name(run.type_k) + "/" + kv_type_name(run.type_v);
    row.memory = plan_memory(v.facts, run);
    row.ram_bytes = dev.ram_bytes;
    row.os_reserve_bytes = dev.os_reserve_bytes;
    row.usable_bytes = dev.usable_bytes();
    row.fit = judge_fit(row.memory.total_bytes(), row.usable_bytes);
    row.speed = estimate_speed(v.facts, row.memory, dev);
    row.runnable = v.facts.runnable;
    row.note = v.facts.note;
    if (row.memory.n_ctx > v.facts.hp.n_ctx_train) {
        row.note += fmt::format("{}the context exceeds the {} tokens the model was trained on",
                                row.note.empty() ? "" : "; ", v.facts.hp.n_ctx_train);
    }
    return row;
}

// The largest context (a multiple of 256, at most run.n_ctx) at which the variant still fits
// with room to spare; 0 when not even 256 tokens do.
uint32_t largest_fitting_ctx(const Variant& v, const DeviceProfile& dev, RunSettings run,
                             Fit needed) {
    if (run.n_threads <= 0 && dev.n_threads > 0) run.n_threads = dev.n_threads;
    const uint32_t wanted = run.n_ctx;
    auto fits = [&](uint32_t ctx) {
        run.n_ctx = ctx;
        const Fit f = judge_fit(plan_memory(v.facts, run).total_bytes(), dev.usable_bytes());
        return f == Fit::yes || (needed == Fit::tight && f == Fit::tight);
    };
    if (wanted < 256 || !fits(256)) return 0;
    uint32_t lo = 1, hi = wanted / 256;  // in units of 256 tokens; lo fits
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo + 1) / 2;
        if (fits(mid * 256)) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    return lo * 256;
}

bool is_float_type(const std::string& label) {
    return label == "F16" || label == "BF16" || label == "F32";
}

Recommendation recommend(const std::string& model, const std::vector<Variant>& variants,
                         const DeviceProfile& dev, const RunSettings& run, double min_tps) {
    Recommendation rec;
    rec.model = model;
    rec.device = dev.id;
    // Best quality first = largest weights first. Q8_0 is within noise of F16 at half the memory
    // and twice the decode speed, so F16 is recommended only when nothing quantized is planned.
    std::vector<const Variant*> order;
    const bool any_quantized = std::any_of(
        variants.begin(), variants.end(), [](const Variant& v) { return !is_float_type(v.label); });
    // A quantization memwall cannot run (a tensor type without kernels, such as the IQ4_NL that
    // llama.cpp's k-quant mixes fall back to) is never recommended while another can run.
    const bool any_runnable = std::any_of(variants.begin(), variants.end(),
                                          [](const Variant& v) { return v.facts.runnable; });
    for (const Variant& v : variants) {
        if (any_runnable && !v.facts.runnable) continue;
        if (!any_quantized || !is_float_type(v.label)) order.push_back(&v);
    }
    std::stable_sort(order.begin(), order.end(), [](const Variant* a, const Variant* b) {
        return a->facts.weights_bytes > b->facts.weights_bytes;
    });
    auto accept = [&](const Variant& v, const RunSettings& r, std::string why) {
        rec.found = true;
        rec.row = make_row(model, v, dev, r);
        rec.advice = std::move(why);
        return rec;
    };
    // The best quality that fits, or with min_tps the best that also decodes that fast (else
    // the fastest that fits: the smallest).
    const Variant* smallest_fitting = nullptr;
    for (const Variant* v : order) {
        const PlanRow row = make_row(model, *v, dev, run);
        if (row.fit != Fit::yes) continue;
        smallest_fitting = v;
        if (min_tps <= 0) {
            return accept(*v, run,
                          fmt::format("{} with {} tokens: the best quantization that fits",
                                      v->label, run.n_ctx));
        }
        if (row.speed.decode_tok_s_expected >= min_tps) {
            return accept(*v, run,
                          fmt::format("{} with {} tokens: the best quantization that fits and "
                                      "decodes at {} tok/s or more",
                                      v->label, run.n_ctx, min_tps));
        }
    }
    if (smallest_fitting) {
        return accept(*smallest_fitting, run,
                      fmt::format("{} with {} tokens: the fastest that fits, below the {} tok/s "
                                  "asked (--min-tps)",
                                  smallest_fitting->label, run.n_ctx, min_tps));
    }
    if (run.type_k != GgmlType::Q8_0 && run.type_k != GgmlType::Q4_0) {
        RunSettings q8 = run;
        q8.type_k = q8.type_v = GgmlType::Q8_0;
        try {
            for (const Variant* v : order) {
                if (make_row(model, *v, dev, q8).fit == Fit::yes) {
                    return accept(*v, q8,
                                  fmt::format("{} with {} tokens and a Q8_0 KV cache "
                                              "(-ctk q8_0 -ctv q8_0)",
                                              v->label, run.n_ctx));
                }
            }
        } catch (const Error&) {
            // Heads too small for Q8_0 blocks: no quantized KV cache for this model.
        }
    }
    for (uint32_t at_least : {std::min<uint32_t>(run.n_ctx, 2048), 512u}) {
        for (const Variant* v : order) {
            const uint32_t ctx = largest_fitting_ctx(*v, dev, run, Fit::yes);
            if (ctx >= at_least && ctx > 0) {
                RunSettings smaller = run;
                smaller.n_ctx = ctx;
                return accept(*v, smaller,
                              fmt::format("{} with a context of {} tokens (of the {} "
                                          "asked)",
                                          v->label, ctx, run.n_ctx));
            }
        }
    }
    for (const Variant* v : order) {
        const uint32_t ctx = largest_fitting_ctx(*v, dev, run, Fit::tight);
        if (ctx >= std::min<uint32_t>(run.n_ctx, 512) && ctx > 0) {
            RunSettings tight = run;
            tight.n_ctx = ctx;
            return accept(*v, tight,
                          fmt::format("{} with {} tokens, but tight: other apps may push it out "
                                      "of memory",
                                      v->label, ctx));
        }
    }
    rec.found = false;
    if (!order.empty()) {
        RunSettings tiny = run;
        tiny.n_ctx = std::min<uint32_t>(run.n_ctx, 512);
        const PlanRow smallest = make_row(model, *order.back(), dev, tiny);
        rec.advice = fmt::format(
            "does not fit: even {} with {} tokens needs {}, {} leaves {}", order.back()->label,
            tiny.n_ctx, gib(smallest.memory.total_bytes()), dev.id, gib(dev.usable_bytes()));
    }
    return rec;
}

// How a model runs at the device's own budget, when it does not fit in RAM or streaming is the
// faster: a file only in its own type (another needs another file), the catalogue in every
// quantization recommend() would consider. The context as asked, else the largest that loads.
void add_streaming(Recommendation& rec, const PlannedModel& m, const std::vector<Variant>& variants,
                   const DeviceProfile& dev, const RunSettings& run) {
    const bool own_file = m.source == "gguf" || m.source == "url";
    const bool any_quantized = std::any_of(variants.begin(), variants.end(), [](const Variant& v) {
        return v.facts.runnable && !is_float_type(v.label);
    });
    std::vector<std::pair<std::string, const ModelFacts*>> quants;
    for (const Variant& v : variants) {
        if (v.facts.runnable &&
            (own_file ? v.file_type : !any_quantized || !is_float_type(v.label)))
            quants.push_back({v.label, &v.facts});
    }
    std::optional<StreamPlan> s;
    RunSettings r = run;
    for (uint32_t ctx : {run.n_ctx, std::min(run.n_ctx, 2048u), std::min(run.n_ctx, 512u)}) {
        r.n_ctx = ctx;
        if ((s = plan_streaming(m.name, quants, dev, r))) break;
    }
    if (s && rec.found) {
        // Beside a configuration that fits, only what really streams (a smaller quantization
        // held whole under the budget is the in-RAM case), and only when faster.
        std::erase_if(s->options,
                      [](const BudgetRow& o) { return o.storage_bytes_per_token == 0; });
        if (s->options.empty() ||
            s->options.front().decode_tok_s <= rec.row.speed.decode_tok_s_expected)
            return;
    }
    if (!s) return;
    const BudgetRow& best = s->options.front();
    std::string file = m.origin.substr(m.origin.rfind('/') + 1);  // a URL: the file pulled
    if (m.source == "gguf") file = m.origin;
    if (m.source == "catalogue" || m.source == "hf_config") {
        file = hf_file_for(m.origin, best.quant, best.file_bytes).file;
        if (file.empty() || file.find(' ') != std::string::npos) {
            file = fmt::format("{}-{}.gguf", m.name, best.quant);
            std::replace(file.begin(), file.end(), ' ', '-');
        }
    }
    s->n_ctx = r.n_ctx;
    s->run_command = stream_run_command(file, *s, r.n_ctx);
    if (!rec.found) {
        rec.advice += fmt::format("; runs with --mem-budget {}, {} streamed ({})", s->budget_arg,
                                  best.moe ? "experts" : "layers", best.quant);
    }
    rec.streamed = std::move(s);
}

// Every variant of a model source: the file's own type first, then the requested recipes.
std::vector<Variant> variants_of(const ModelSource& src, const std::vector<QuantRecipe>& quants,
                                 PlannedModel& planned) {
    std::vector<Variant> out;
    if (src.kind == ModelSource::Kind::file || src.kind == ModelSource::Kind::url) {
        const bool remote = src.kind == ModelSource::Kind::url;
        if (remote) planned.remote.emplace();
        const Header h = remote ? parse_remote_header(src.value, &*planned.remote)
                                : parse_file_header(src.value);
        Variant own;
        own.facts = model_facts(h.gguf, "");
        own.label = file_type_label(h.gguf, own.facts);
        own.facts.quant = own.label;
        own.file_type = true;
        planned.name = own.facts.name;
        planned.source = remote ? "url" : "gguf";
        planned.origin = src.value;
        const HParams hp = own.facts.hp;
        for (QuantRecipe q : quants) {
            if (own.label == recipe_name(q)) continue;
            const Header rh = parse_written(requantized_header(h.gguf, hp, q),
                                            src.value + " as " + recipe_name(q));
            Variant v{recipe_name(q), false, model_facts(rh.gguf, recipe_name(q))};
            v.facts.name = own.facts.name;
            v.facts.header_bytes = own.facts.header_bytes;
            v.facts.n_merges = own.facts.n_merges;
            out.push_back(std::move(v));
        }
        out.insert(out.begin(), std::move(own));
        return out;
    }
    ModelSpec spec;
    if (src.kind == ModelSource::Kind::catalogue) {
        const ModelSpec* found = find_catalogue_model(src.value);
        if (!found) {
            std::string known;
            for (const ModelSpec& s : model_catalogue())
                known += (known.empty() ? "" : ", ") + s.id;
            fail(ErrorKind::invalid_argument, "unknown model \"{}\" (the catalogue has: {})",
                 src.value, known);
        }
        spec = *found;
        planned.source = "catalogue";
        planned.origin = spec.id;
    } else {
        std::ifstream in(src.value, std::ios::binary);
        if (!in) fail(ErrorKind::io, "{}: cannot read the config file", src.value);
        std::stringstream ss;
        ss << in.rdbuf();
        spec = spec_from_hf_config(ss.str(), src.value);
        planned.source = "hf_config";
        planned.origin = src.value;
    }
    planned.name = spec.name;
    for (QuantRecipe q : quants) {
        const Header h = parse_written(spec_gguf_header(spec, q), spec.name);
        Variant v{recipe_name(q), false, model_facts(h.gguf, recipe_name(q))};
        v.facts.name = spec.name;
        out.push_back(std::move(v));
    }
    return out;
}

}  // namespace

std::optional<GgmlType> kv_type_from_name(const std::string& name) {
    static const std::pair<const char*, GgmlType> kTypes[] = {
        {"f32", GgmlType::F32},   {"f16", GgmlType::F16},   {"bf16", GgmlType::BF16},
        {"q8_0", GgmlType::Q8_0}, {"q4_0", GgmlType::Q4_0},
    };
    std::string lower;
    for (char c : name) lower += char(std::tolower(static_cast<unsigned char>(c)));
    for (const auto& [n, t] : kTypes) {
        if (lower == n) return t;
    }
    return std::nullopt;
}

std::string kv_type_name(GgmlType type) {
    const auto layout = ggml_layout(static_cast<uint32_t>(type));
    std::string s = layout ? std::string(layout->name) : "?";
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

MemoryPlan plan_memory(const ModelFacts& f, const RunSettings& run) {
    MemoryPlan m;
    m.n_ctx = run.n_ctx ? run.n_ctx : default_context_size(f.hp);
    if (m.n_ctx == 0) m.n_ctx = 4096;
    const uint32_t n_batch = std::clamp<uint32_t>(run.n_batch ? run.n_batch : 512, 1, m.n_ctx);
    const int n_threads = run.n_threads > 0 ? run.n_threads : default_thread_count();
    m.weights_bytes = f.weights_bytes;
    // Gemma 4's per-layer embedding table stays on storage but for a cache of recent tokens'
    // rows (runtime/ple_reader.h), unless --ple-resident or MEMWALL_PLE=resident keeps it.
    if (ple_on_storage(f.model, run.ple_resident)) {
        m.weights_bytes -= std::min(m.weights_bytes, ple_table_bytes(f.model));
        m.weights_bytes += ple_cache_bytes(f.model);
    }
    const uint32_t n_seq = std::max(1u, run.n_seq);
    m.kv_bytes = KvCache::bytes_needed(f.hp, m.n_ctx, run.type_k, run.type_v, n_seq, n_batch);
    m.state_bytes = RecurrentState::bytes_needed(
        f.hp, n_seq,
        RecurrentState::kDefaultCheckpoints +
            (run.speculative || run.self_drafting || run.draft || run.mtp ? 1 : 0));
    // A decode step of every sequence keeps a row of logits for each.
    m.compute_bytes = ForwardScratch::planned_bytes(f.model, n_batch, m.n_ctx, n_threads, n_seq) +
                      uint64_t(f.hp.n_vocab) * sizeof(float) * n_seq;
    m.overhead_bytes = (run.shares_process ? 0 : kProcessBytes) + f.header_bytes +
                       f.decoded_vector_bytes + uint64_t(f.hp.n_vocab) * kVocabBytesPerToken +
                       f.n_merges * kVocabBytesPerMerge + (f.n_merges ? kBpeFixedBytes : 0) +
                       uint64_t(n_threads) * kThreadBytes;
    if (run.mtp && !f.model.nextn.empty()) {
        const Model head = nextn_model(f.model);
        const uint64_t kv =
            SeqMemory::bytes_needed(head.hp, m.n_ctx, run.type_k, run.type_v, n_seq, n_batch);
        m.kv_bytes += kv;
        m.compute_bytes += MtpDrafter::planned_bytes(f.model, m.n_ctx, n_batch, n_seq, run.type_k,
                                                     run.type_v, n_threads) -
                           kv + uint64_t(f.hp.n_vocab) * sizeof(float) * n_seq * run.draft_max;
    }
    if (run.draft || run.self_drafting)
        m.compute_bytes += uint64_t(f.hp.n_vocab) * sizeof(float) * n_seq * run.draft_max;
    if (run.draft) {
        // The draft's context follows the target's: the same resolved size, batch, threads, KV
        // type and sequences; it marks and rolls back too.
        RunSettings d = run;
        d.draft.reset();
        d.n_ctx = m.n_ctx;
        d.speculative = true;
        d.shares_process = true;
        m.draft = std::make_shared<const MemoryPlan>(plan_memory(*run.draft, d));
    }
    return m;
}

const char* fit_name(Fit fit) {
    switch (fit) {
        case Fit::yes:
            return "yes";
        case Fit::tight:
            return "tight";
        case Fit::no:
            return "no";
    }
    return "no";
}

Fit judge_fit(uint64_t total, uint64_t usable) {
    if (double(total) <= 0.9 * double(usable)) return Fit::yes;
    return total <= usable ? Fit::tight : Fit::no;
}

SpeedEstimate estimate_speed(const ModelFacts& f, const MemoryPlan& m, const DeviceProfile& dev) {
    SpeedEstimate s;
    s.decode_bytes_per_token = f.bytes_per_token;
    if (f.bytes_per_token > 0 && dev.bandwidth_bytes_per_s > 0) {
        s.decode_tok_s_ceiling = dev.bandwidth_bytes_per_s / double(f.bytes_per_token);
        s.decode_tok_s_expected = s.decode_tok_s_ceiling * dev.decode_efficiency;
        s.decode_tok_s_ceiling_full_ctx =
            dev.bandwidth_bytes_per_s / double(f.bytes_per_token + m.kv_bytes);
    }
    // Attention over a prompt of P tokens: Q.K and A.V, 2 FLOPs each, P/2 positions on average.
    const double prompt = std::min<double>(m.n_ctx, 512);
    const double attention = 4.0 * f.hp.n_layer * f.hp.n_head * f.hp.head_dim_k * prompt / 2;
    const double flops = double(f.flops_per_token) + attention;
    if (flops > 0) s.prefill_tok_s_expected = dev.prefill_gflops * 1e9 / flops;
    return s;
}

const std::vector<QuantRecipe>& default_plan_quants() {
    static const std::vector<QuantRecipe> quants = {
        QuantRecipe::F16,    QuantRecipe::Q8_0,   QuantRecipe::Q6_K, QuantRecipe::Q5_K_M,
        QuantRecipe::Q4_K_M, QuantRecipe::Q3_K_M, QuantRecipe::Q2_K};
    return quants;
}

PlanResult make_plan(const PlanRequest& request) {
    PlanResult r;
    r.run = request.run;  // n_ctx 0: each model's default, as the runtime chooses it
    r.min_tps = request.min_tps;
    r.devices = request.devices;
    if (r.devices.empty()) {
        for (const DeviceProfile* d : seed_devices()) r.devices.push_back(*d);
    }
    std::vector<ModelSource> sources = request.models;
    if (sources.empty()) {
        for (const ModelSpec* s : seed_models()) {
            sources.push_back({ModelSource::Kind::catalogue, s->id});
        }
    }
    const std::vector<QuantRecipe>& quants =
        request.quants.empty() ? default_plan_quants() : request.quants;

    struct Planned {
        PlannedModel model;
        std::vector<Variant> variants;
        RunSettings run;
    };
    std::vector<Planned> planned_models;
    for (const ModelSource& src : sources) {
        Planned p;
        PlannedModel& planned = p.model;
        p.variants = variants_of(src, quants, planned);
        // Describe the model by its file's own type, else by Q4_K_M (or the first planned).
        const Variant* main = &p.variants.front();
        for (const Variant& v : p.variants) {
            if (v.file_type || (!main->file_type && v.label == "Q4_K_M")) main = &v;
        }
        planned.facts = main->facts;
        planned.kv_bytes_per_token =
            KvCache::bytes_per_position(main->facts.hp, r.run.type_k, r.run.type_v);
        p.run = r.run;
        if (p.run.n_ctx == 0) p.run.n_ctx = default_context_size(main->facts.hp);
        planned_models.push_back(std::move(p));
    }
    // This machine is measured (when nothing is saved) only once every model has been read: a
    // bad file fails at once.
    for (DeviceProfile& dev : r.devices) {
        if (is_this_device_placeholder(dev)) dev = this_device();
    }
    for (Planned& p : planned_models) {
        for (const DeviceProfile& dev : r.devices) {
            Recommendation rec = recommend(p.model.name, p.variants, dev, p.run, request.min_tps);
            add_streaming(rec, p.model, p.variants, dev, p.run);
            if (request.best_only) {
                if (rec.found) r.rows.push_back(rec.row);
            } else {
                for (const Variant& v : p.variants)
                    r.rows.push_back(make_row(p.model.name, v, dev, p.run));
            }
            r.recommendations.push_back(std::move(rec));
            if (!request.budget_fractions.empty() || !request.mem_budgets.empty()) {
                const PlannedModel& m = p.model;
                for (BudgetRow& b : plan_budgets(m.name, m.facts.quant, m.facts, dev, p.run,
                                                 request.budget_fractions, request.mem_budgets))
                    r.budget_rows.push_back(std::move(b));
            }
        }
        r.models.push_back(std::move(p.model));
    }
    return r;
}

void set_draft_model(RunSettings& run, const std::string& draft_path) {
    const Header d = net::is_remote(draft_path) ? parse_remote_header(draft_path, nullptr)
                                                : parse_file_header(draft_path);
    ModelFacts facts = model_facts(d.gguf, "");
    facts.quant = file_type_label(d.gguf, facts);
    run.draft = std::make_shared<const ModelFacts>(std::move(facts));
    run.draft_name = draft_path;
}

FitCheck check_fit(const std::string& path, const std::string& draft_path, uint32_t draft_max,
                   RunSettings run) {
    if (draft_path.empty()) {
        run.self_drafting = true;
    } else {
        set_draft_model(run, draft_path);
    }
    run.draft_max = draft_max;
    return check_fit(path, run);
}

FitCheck check_fit(const std::string& path, const RunSettings& run) {
    const Header h =
        net::is_remote(path) ? parse_remote_header(path, nullptr) : parse_file_header(path);
    FitCheck c = check_fit(h.gguf, run);
    if (c.fit == Fit::no) c.message += "\nUse --force to run anyway.";
    return c;
}

FitCheck check_fit(const gguf::GgufFile& header, const RunSettings& run) {
    const std::string& path = header.name();
    Variant own{"", true, model_facts(header, "")};
    own.label = file_type_label(header, own.facts);

    FitCheck c;
    c.memory = plan_memory(own.facts, run);
    const MemoryNow now = memory_now();
    c.available_bytes = now.available_bytes;
    c.fit = judge_fit(c.memory.total_bytes(), c.available_bytes);
    const MemoryPlan& m = c.memory;
    const std::string file = path.substr(path.rfind('/') + 1);
    c.message = fmt::format(
        "{} ({}) with a {}-token context needs {}: weights {} + KV cache {} ({}){} + compute {} + "
        "overhead {}",
        file, own.label, m.n_ctx, gib(m.own_bytes()), gib(m.weights_bytes), gib(m.kv_bytes),
        kv_type_name(run.type_k),
        m.state_bytes ? fmt::format(" + recurrent state {}", gib(m.state_bytes)) : "",
        gib(m.compute_bytes), gib(m.overhead_bytes));
    if (const MemoryPlan* d = m.draft.get()) {
        const std::string draft = run.draft_name.substr(run.draft_name.rfind('/') + 1);
        c.message += fmt::format(
            "; the draft model {} ({}) needs {}: weights {} + KV cache {}{} + compute {} + "
            "overhead {}; {} in all",
            draft, run.draft->quant, gib(d->total_bytes()), gib(d->weights_bytes), gib(d->kv_bytes),
            d->state_bytes ? fmt::format(" + recurrent state {}", gib(d->state_bytes)) : "",
            gib(d->compute_bytes), gib(d->overhead_bytes), gib(m.total_bytes()));
    }
    c.message += fmt::format("; {} is available now ({})", gib(c.available_bytes), now.source);
    if (c.fit != Fit::no) return c;

    // The nearest configurations that fit: a smaller context, a quantized KV cache, then a
    // smaller quantization of the same model (another file).
    DeviceProfile here;
    here.id = "this machine";
    here.ram_bytes = c.available_bytes;
    std::vector<std::string> options;
    RunSettings resolved = run;
    resolved.n_ctx = m.n_ctx;
    if (m.n_ctx > own.facts.hp.n_ctx_train) {
        RunSettings r = resolved;
        r.n_ctx = own.facts.hp.n_ctx_train;
        const uint64_t total = plan_memory(own.facts, r).total_bytes();
        if (judge_fit(total, c.available_bytes) == Fit::yes) {
            options.push_back(fmt::format(
                "-c {} (the context the model was trained with; needs {})", r.n_ctx, gib(total)));
        }
    }
    if (const uint32_t ctx = largest_fitting_ctx(own, here, resolved, Fit::yes)) {
        RunSettings r = resolved;
        r.n_ctx = ctx;
        options.push_back(
            fmt::format("-c {} (needs {})", ctx, gib(plan_memory(own.facts, r).total_bytes())));
    }
    for (GgmlType kv : {GgmlType::Q8_0, GgmlType::Q4_0}) {
        if (kv == run.type_k || (kv == GgmlType::Q8_0 && run.type_k == GgmlType::Q4_0)) continue;
        RunSettings r = resolved;
        r.type_k = r.type_v = kv;
        try {
            const uint64_t total = plan_memory(own.facts, r).total_bytes();
            if (judge_fit(total, c.available_bytes) == Fit::yes) {
                options.push_back(
                    fmt::format("-ctk {0} -ctv {0} (needs {1})", kv_type_name(kv), gib(total)));
                break;
            }
        } catch (const Error&) {
            // the head size does not suit this KV type
        }
    }
    const HParams hp = own.facts.hp;
    for (QuantRecipe q : {QuantRecipe::Q4_K_M, QuantRecipe::Q3_K_M, QuantRecipe::Q2_K}) {
        const Header rh = parse_written(requantized_header(header, hp, q), path);
        ModelFacts f = model_facts(rh.gguf, recipe_name(q));
        f.header_bytes = own.facts.header_bytes;
        f.n_merges = own.facts.n_merges;
        if (f.weights_bytes >= own.facts.weights_bytes) continue;
        const uint64_t total = plan_memory(f, resolved).total_bytes();
        if (judge_fit(total, c.available_bytes) == Fit::yes) {
            options.push_back(
                fmt::format("a {} file of this model (needs {})", recipe_name(q), gib(total)));
            break;
        }
    }
    if (m.draft) {
        RunSettings r = resolved;
        r.draft.reset();
        const uint64_t total = plan_memory(own.facts, r).total_bytes();
        if (judge_fit(total, c.available_bytes) == Fit::yes) {
            options.push_back(fmt::format("without the draft model (needs {})", gib(total)));
        }
    }
    c.message = "does not fit in the memory available now: " + c.message + ".\n";
    if (options.empty()) {
        c.message +=
            "Nothing close fits: no smaller context, KV cache type or quantization of "
            "this model leaves enough room.";
    } else {
        c.message += "Configurations that fit:";
        for (const std::string& o : options) c.message += "\n  " + o;
    }
    return c;
}

}  // namespace mw
