// The C API of the converters (include/memwall.h, "Conversion to GGUF").
#include <cstring>
#include <string>

#include "api/api_error.h"
#include "api/api_params.h"
#include "base/error.h"
#include "convert/convert.h"
#include "memwall.h"

namespace {

mw::convert::ConvertOptions options_of(const mw_convert_params& p) {
    mw::convert::ConvertOptions o;
    if (p.outtype) {
        o.out_type = mw::convert::out_type_from_name(p.outtype);
        if (!o.out_type) {
            mw::fail(mw::ErrorKind::invalid_argument,
                     "output type \"{}\" is not one of f32, f16, bf16, q8_0", p.outtype);
        }
    }
    if (p.vocab_pre) o.vocab_pre = p.vocab_pre;
    if (p.name) o.name = p.name;
    if (p.progress) {
        o.on_tensor = [&p](size_t done, size_t total, const std::string& tensor) {
            p.progress(int32_t(done), int32_t(total), tensor.c_str(), p.user_data);
        };
    }
    return o;
}

void copy_text(char* dst, size_t size, const std::string& s) {
    const size_t n = std::min(s.size(), size - 1);
    std::memcpy(dst, s.data(), n);
    dst[n] = '\0';
}

void fill_result(const mw::convert::ConvertResult& r, mw_convert_result* out) {
    if (!out) return;
    *out = {};
    copy_text(out->arch, sizeof out->arch, r.arch);
    out->n_tensors = int32_t(r.n_tensors);
    out->n_vocab = int32_t(r.n_vocab);
    out->n_params = r.n_params;
    out->file_bytes = r.file_bytes;
    std::string warnings;
    for (const std::string& w : r.warnings) warnings += w + "\n";
    copy_text(out->warnings, sizeof out->warnings, warnings);
}

mw_status invalid(const char* message) {
    mw::set_api_last_error(message);
    return MW_ERR_INVALID_ARGUMENT;
}

}  // namespace

extern "C" {

void mw_convert_params_init(mw_convert_params* out, size_t struct_size) {
    mw_convert_params p{};
    p.outtype = nullptr;
    p.vocab_pre = nullptr;
    p.name = nullptr;
    p.progress = nullptr;
    p.user_data = nullptr;
    mw::init_params(out, struct_size, p);
}

mw_status mw_convert_hf(const char* hf_dir, const char* out_path, const mw_convert_params* params,
                        mw_convert_result* out) {
    if (!hf_dir || !out_path) return invalid("mw_convert_hf: hf_dir and out_path are required");
    mw_convert_params p;
    if (!mw::read_params(params, mw_convert_default_params(), &p, "mw_convert_params"))
        return MW_ERR_INVALID_ARGUMENT;
    return mw::guarded(
        [&] { fill_result(mw::convert::convert_hf(hf_dir, out_path, options_of(p)), out); });
}

mw_status mw_convert_llama2c(const char* checkpoint, const char* tokenizer, const char* out_path,
                             const mw_convert_params* params, mw_convert_result* out) {
    if (!checkpoint || !tokenizer || !out_path) {
        return invalid("mw_convert_llama2c: checkpoint, tokenizer and out_path are required");
    }
    mw_convert_params p;
    if (!mw::read_params(params, mw_convert_default_params(), &p, "mw_convert_params"))
        return MW_ERR_INVALID_ARGUMENT;
    return mw::guarded([&] {
        fill_result(mw::convert::convert_llama2c(checkpoint, tokenizer, out_path, options_of(p)),
                    out);
    });
}

}  // extern "C"
