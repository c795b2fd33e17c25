// Vocab::from_gguf: reads tokenizer.ggml.* with the defaults llama.cpp applies when keys are
// absent, and validates everything a hostile file could get wrong before it is used.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "format/gguf.h"
#include "vocab/vocab_impl.h"

namespace mw {

namespace {

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
uint32_t attr_of_token_type(int64_t type) {
    switch (type) {
        case 1:
            return token_attr_normal;
        case 2:
            return token_attr_unknown;
        case 3:
            return token_attr_control;
        case 4:
            return token_attr_user_defined;
        case 5:
            return token_attr_unused;
        case 6:
            return token_attr_byte;
        default:
            return token_attr_undefined;
    }
}

bool is_hex_digit(char c) {
    return std::isxdigit(static_cast<unsigned char>(c)) != 0;
}

// "<0xAB>"
bool is_byte_token_text(std::string_view text) {
    return text.size() == 6 && text.substr(0, 3) == "<0x" && is_hex_digit(text[3]) &&
           is_hex_digit(text[4]) && text[5] == '>';
}

class Loader {
  public:
    Loader(const gguf::GgufFile& file, Vocab::Impl& v) : file_(file), v_(v) {}

    void load() {
        v_.file_name = file_.name();
        read_model();
        read_tokens();
        if (v_.type == VocabType::bpe) read_merges();
        if (v_.spm_style) fill_byte_tokens(true);
        if (v_.type == VocabType::spm) {
            fill_byte_tokens(false);
            v_.spm_words_are_independent = no_token_has_inner_space();
        }
        v_.newline = find_newline();
        read_special_ids();
        read_flags();
        detect_special_tokens_by_text();
        collect_special_tokens();
        apply_model_specific_attributes();
    }

  private:
    [[noreturn]] void bad(std::string_view key, const std::string& what) const {
        fail(ErrorKind::bad_file, "{}: metadata \"{}\" {}", file_.name(), key, what);
    }

    // Element i of a numeric array as an integer; a float or an integer beyond i64 is refused
    // with the key (the array accessors do not know it).
    int64_t element_i64(const gguf::Value& array, std::string_view key, uint64_t i) const {
        try {
            return array.elem_i64(i);
        } catch (const Error& e) {
            bad(key, fmt::format("[{}]: {}", i, e.what()));
        }
    }

    void read_model() {
        const auto model = file_.get_string("tokenizer.ggml.model");
        if (!model) bad("tokenizer.ggml.model", "is missing (the file has no tokenizer)");
        v_.model = std::string(*model);
        v_.pre = std::string(file_.get_string("tokenizer.ggml.pre").value_or(""));

        if (v_.model == "llama") {
            v_.type = VocabType::spm;
            v_.bos = 1, v_.eos = 2, v_.unk = 0;
            v_.add_space_prefix = true;
            v_.add_bos = true;
        } else if (v_.model == "bert") {
            v_.type = VocabType::wpm;
            v_.bos = 101, v_.unk = 100, v_.sep = 102, v_.pad = 0, v_.mask = 103;
            v_.add_bos = true;
            v_.add_sep = true;
            v_.clean_spaces = true;
        } else if (v_.model == "gpt2" || v_.model == "gemma4") {
            v_.type = VocabType::bpe;
            if (v_.model == "gpt2") {
                v_.bos = 11, v_.eos = 11;
            } else {
                v_.pre = "gemma4";  // llama.cpp ignores the file's pre-tokenizer for this model
            }
            tokenizer::PreTokenizerConfig config;
            if (!tokenizer::pre_tokenizer_config(v_.pre, config)) {
                fail(ErrorKind::unsupported,
                     "{}: metadata \"tokenizer.ggml.pre\" = \"{}\" is a pre-tokenizer memwall does "
                     "not know",
                     file_.name(), v_.pre);
            }
            v_.pre_tokenizer =
                std::make_unique<tokenizer::PreTokenizer>(config.regexes, !config.spm_style);
            v_.ignore_merges = config.ignore_merges;
            v_.spm_style = config.spm_style;
            force_add_bos_ = config.spm_style;
            v_.add_bos = config.add_bos;
            v_.clean_spaces = config.clean_spaces;
            if (config.bos_disabled) v_.bos = kNoToken;
        } else if (v_.model == "t5" || v_.model == "rwkv" || v_.model == "plamo2" ||
                   v_.model == "no_vocab" || v_.model == "none") {
            fail(ErrorKind::unsupported,
                 "{}: metadata \"tokenizer.ggml.model\" = \"{}\": memwall supports the llama "
                 "(SentencePiece), gpt2 (byte-level BPE), gemma4 (SentencePiece-style BPE) and "
                 "bert (WordPiece) tokenizers",
                 file_.name(), v_.model);
        } else {
            bad("tokenizer.ggml.model", fmt::format("= \"{}\" is not a known tokenizer", v_.model));
        }
        if (const auto prefix = file_.get_bool("tokenizer.ggml.add_space_prefix")) {
            v_.add_space_prefix = *prefix;
        }
    }

    void read_tokens() {
        const char* key = "tokenizer.ggml.tokens";
        const gguf::Value* tokens = file_.get_array(key, gguf::ValueType::string);
        if (!tokens) bad(key, "is missing");
        const uint64_t n = tokens->count;
        if (n == 0) bad(key, "is empty");
        if (n > uint64_t(std::numeric_limits<int32_t>::max())) {
            bad(key, fmt::format("has {} tokens, more than token ids can number", n));
        }

        const gguf::Value* scores = file_.get_array("tokenizer.ggml.scores", gguf::ValueType::f32);
        if (scores && scores->count != n) {
            bad("tokenizer.ggml.scores",
                fmt::format("has {} entries for {} tokens", scores->count, n));
        }
        const gguf::Value* types =
            file_.get_array("tokenizer.ggml.token_type", gguf::ValueType::i32);
        if (types && types->count != n) {
            bad("tokenizer.ggml.token_type",
                fmt::format("has {} entries for {} tokens", types->count, n));
        }

        v_.tokens.resize(n);
        v_.ids.reserve(n);
        for (uint64_t i = 0; i < n; ++i) {
            Vocab::Impl::Token& t = v_.tokens[i];
            t.text = std::string(tokens->strings[i]);
            if (t.text.empty()) t.text = fmt::format("[EMPTY_{}]", i);  // as llama.cpp names it
            if (scores) {
                const double s = scores->elem_f64(i);
                if (std::isnan(s)) bad("tokenizer.ggml.scores", fmt::format("[{}] is NaN", i));
                t.score = float(s);
            }
            if (types)
                t.attr = attr_of_token_type(element_i64(*types, "tokenizer.ggml.token_type", i));
            if ((t.attr & token_attr_byte) && !is_byte_token_text(t.text)) {
                bad("tokenizer.ggml.token_type",
                    fmt::format("marks token {} (\"{}\") as a byte, but it is not spelled <0xXX>",
                                i, t.text));
            }
            const auto [it, inserted] = v_.ids.emplace(t.text, int32_t(i));
            if (!inserted) {
                bad(key, fmt::format("has the token \"{}\" twice (ids {} and {})", t.text,
                                     it->second, i));
            }
            v_.max_token_length = std::max(v_.max_token_length, t.text.size());
        }
    }

    void read_merges() {
        const char* key = "tokenizer.ggml.merges";
        const gguf::Value* merges = file_.get_array(key, gguf::ValueType::string);
        if (!merges)
            bad(key, fmt::format("is missing (a {} tokenizer needs its BPE merges)", v_.model));
        if (merges->count > uint64_t(std::numeric_limits<int32_t>::max())) {
            bad(key, fmt::format("has {} entries, too many", merges->count));
        }
        v_.merges.reserve(merges->count);
        for (uint64_t i = 0; i < merges->count; ++i) {
            const std::string_view merge = merges->strings[i];
            const size_t space = merge.find(' ', 1);
            if (space == merge.npos) {
                bad(key,
                    fmt::format("[{}] = \"{}\" is not two tokens separated by a space", i, merge));
            }
            const std::string_view left = merge.substr(0, space), right = merge.substr(space + 1);
            const int32_t a = v_.find(left), b = v_.find(right);
            const int32_t result = v_.find(std::string(left) + std::string(right));
            if (a == kNoToken || b == kNoToken || result == kNoToken) {
                bad(key,
                    fmt::format("[{}] = \"{}\" refers to \"{}\", which is not a token", i, merge,
                                a == kNoToken   ? std::string(left)
                                : b == kNoToken ? std::string(right)
                                                : std::string(left) + std::string(right)));
            }
            // The first occurrence of a pair keeps its rank, as in llama.cpp.
            v_.merges.emplace((uint64_t(uint32_t(a)) << 32) | uint32_t(b),
                              Vocab::Impl::Merge{int32_t(i), result});
        }
    }

    // Byte fallback: "<0xAB>", else (not hex_only) a token spelled as the byte itself.
    void fill_byte_tokens(bool hex_only) {
        static constexpr char kHex[] = "0123456789ABCDEF";
        for (int b = 0; b < 256; ++b) {
            const char name[6] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
            int32_t id = v_.find(std::string_view(name, 6));
            if (id == kNoToken && !hex_only) id = v_.find(std::string(1, char(b)));
            v_.byte_tokens[size_t(b)] = id;
        }
    }

    // True when "▁" occurs in tokens only as a leading run ("▁▁the" but not "a▁b"): then no
    // SentencePiece merge can join a word to the spaces before the next one.
    bool no_token_has_inner_space() const {
        static constexpr std::string_view kSpace = "\xE2\x96\x81";
        for (const auto& token : v_.tokens) {
            std::string_view rest = token.text;
            while (rest.substr(0, kSpace.size()) == kSpace) rest.remove_prefix(kSpace.size());
            if (rest.find(kSpace) != rest.npos) return false;
        }
        return true;
    }

    // The token for "\n" (before special tokens are known, as in llama.cpp).
    int32_t find_newline() const {
        switch (v_.type) {
            case VocabType::spm:
                return v_.byte_tokens['\n'] != kNoToken ? v_.byte_tokens['\n'] : v_.pad;
            case VocabType::wpm:
                return v_.pad;
            case VocabType::bpe: {
                const std::vector<int32_t> ids = tokenize(v_, "\n", false, false);
                return ids.empty() ? v_.pad : ids[0];
            }
        }
        return kNoToken;
    }

    void read_special_ids() {
        const int32_t n = int32_t(v_.tokens.size());
        const std::pair<const char*, int32_t*> keys[] = {
            {"tokenizer.ggml.bos_token_id", &v_.bos},
            {"tokenizer.ggml.eos_token_id", &v_.eos},
            {"tokenizer.ggml.eot_token_id", &v_.eot},
            {"tokenizer.ggml.eom_token_id", &v_.eom},
            {"tokenizer.ggml.unknown_token_id", &v_.unk},
            {"tokenizer.ggml.seperator_token_id", &v_.sep},  // sic: llama.cpp's spelling
            {"tokenizer.ggml.padding_token_id", &v_.pad},
            {"tokenizer.ggml.mask_token_id", &v_.mask},
            {"tokenizer.ggml.fim_pre_token_id", &v_.fim_pre},
            {"tokenizer.ggml.fim_suf_token_id", &v_.fim_suf},
            {"tokenizer.ggml.fim_mid_token_id", &v_.fim_mid},
            {"tokenizer.ggml.fim_pad_token_id", &v_.fim_pad},
            {"tokenizer.ggml.fim_rep_token_id", &v_.fim_rep},
            {"tokenizer.ggml.fim_sep_token_id", &v_.fim_sep},
            {"tokenizer.ggml.prefix_token_id", &v_.fim_pre},  // deprecated names
            {"tokenizer.ggml.suffix_token_id", &v_.fim_suf},
            {"tokenizer.ggml.middle_token_id", &v_.fim_mid},
        };
        for (const auto& [key, id] : keys) {
            if (*id >= n) *id = kNoToken;  // a default the vocabulary is too small for
            const auto value = file_.get_i64(key);
            if (!value) continue;
            // -1, also when written as u32 (llama2.c conversions do), means "none": keep the
            // default, as llama.cpp does for every out-of-range id.
            if (*value == -1 || *value == 0xFFFFFFFF) continue;
            if (*value < 0 || *value >= n) {
                bad(key, fmt::format("= {} is not a token id (the vocabulary has {} tokens)",
                                     *value, n));
            }
            *id = int32_t(*value);
        }
    }

    void read_flags() {
        if (const auto b = file_.get_bool("tokenizer.ggml.add_bos_token")) v_.add_bos = *b;
        // Gemma 4 files converted with add_bos_token = false still need BOS; llama.cpp forces it.
        if (force_add_bos_) v_.add_bos = true;
        if (const auto b = file_.get_bool("tokenizer.ggml.add_eos_token")) v_.add_eos = *b;
        if (const auto b = file_.get_bool("tokenizer.ggml.add_sep_token")) v_.add_sep = *b;
        auto check = [&](bool add, int32_t id, const char* add_key, const char* id_key) {
            if (add && id == kNoToken)
                bad(add_key, fmt::format("is true, but \"{}\" is not set", id_key));
        };
        if (force_add_bos_ && v_.bos == kNoToken) {
            bad("tokenizer.ggml.bos_token_id",
                fmt::format("is not set (the {} tokenizer always adds BOS)", v_.pre));
        }
        check(v_.add_bos, v_.bos, "tokenizer.ggml.add_bos_token", "tokenizer.ggml.bos_token_id");
        check(v_.add_eos, v_.eos, "tokenizer.ggml.add_eos_token", "tokenizer.ggml.eos_token_id");
        check(v_.add_sep, v_.sep, "tokenizer.ggml.add_sep_token",
              "tokenizer.ggml.seperator_token_id");
        if (v_.type == VocabType::wpm) {
            // WordPiece frames the text with CLS (= BOS) and SEP.
            if (v_.bos == kNoToken)
                bad("tokenizer.ggml.bos_token_id", "is not set (bert needs CLS)");
            if (v_.sep == kNoToken)
                bad("tokenizer.ggml.seperator_token_id", "is not set (bert needs SEP)");
        }
        if (const auto b = file_.get_bool("tokenizer.ggml.normalizer.lowercase")) {
            v_.wpm_lowercase = *b;
        }
        v_.wpm_strip_accents = v_.wpm_lowercase;
        if (const auto b = file_.get_bool("tokenizer.ggml.normalizer.strip_accents")) {
            v_.wpm_strip_accents = *b;
        }
    }

    // Marks a token found by its text as control (llama.cpp overrides the type of such
    // "control-looking" tokens) and returns its id, or kNoToken.
    int32_t control_token(std::string_view text) {
        const int32_t id = v_.find(text);
        if (id != kNoToken) v_.tokens[size_t(id)].attr |= token_attr_control;
        return id;
    }

    void detect_by_text(int32_t& id, std::initializer_list<std::string_view> texts) {
        if (id != kNoToken) return;
        for (const std::string_view text : texts) {
            id = control_token(text);
            if (id != kNoToken) return;
        }
    }

    // Converters do not always write EOT/EOM/FIM ids; llama.cpp finds them by their text, and
    // keeps a set of end-of-generation tokens the same way.
    void detect_special_tokens_by_text() {
        detect_by_text(v_.eot, {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
                                "<|endoftext|>", "<|end_of_text|>", "<EOT>", "_<EOT>",
                                "<\xEF\xBD\x9C"
                                "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
                                "<end_of_utterance>"});
        detect_by_text(v_.eom, {"<|eom_id|>"});
        detect_by_text(v_.fim_pre, {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
                                    "<\xEF\xBD\x9C"
                                    "fim\xE2\x96\x81"
                                    "begin\xEF\xBD\x9C>",
                                    "<PRE>", "\xE2\x96\x81<PRE>", "<|code_prefix|>"});
        detect_by_text(v_.fim_suf, {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
                                    "<\xEF\xBD\x9C"
                                    "fim\xE2\x96\x81hole\xEF\xBD\x9C>",
                                    "<SUF>", "\xE2\x96\x81<SUF>", "<|code_suffix|>"});
        detect_by_text(v_.fim_mid, {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
                                    "<\xEF\xBD\x9C"
                                    "fim\xE2\x96\x81"
                                    "end\xEF\xBD\x9C>",
                                    "<MID>", "\xE2\x96\x81<MID>", "<|code_middle|>"});
        detect_by_text(v_.fim_pad, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>"});
        detect_by_text(v_.fim_rep,
                       {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"});
        detect_by_text(v_.fim_sep, {"<|file_sep|>"});

        for (const int32_t id : {v_.fim_pad, v_.fim_rep, v_.fim_sep}) {
            if (id != kNoToken) v_.eog.insert(id);
        }
        for (const std::string_view text :
             {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<end_of_turn>",
              "<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>",
              "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>"}) {
            const int32_t id = control_token(text);
            if (id != kNoToken) v_.eog.insert(id);
        }
        // gpt-oss formatting tokens are printed like text.
        for (const std::string_view text :
             {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}) {
            const int32_t id = v_.find(text);
            if (id != kNoToken) v_.tokens[size_t(id)].attr = token_attr_user_defined;
        }
        for (const int32_t id : {v_.eos, v_.eot, v_.eom}) {
            if (id != kNoToken) v_.eog.insert(id);
        }
        // Gemma 4: "</s>" is ordinary text there (llama.cpp makes it normal when the vocab has
        // <|tool_response>), so it neither ends generation nor splits out as a special token.
        const int32_t s_end = v_.find("</s>");
        if (s_end != kNoToken && v_.find("<|tool_response>") != kNoToken) {
            v_.eog.erase(s_end);
            v_.tokens[size_t(s_end)].attr = token_attr_normal;
        }
        // gpt-oss: with <|return|> and <|call|> present, <|end|> ends a message, not generation.
        const int32_t end = v_.find("<|end|>");
        if (end != kNoToken && v_.eog.count(end) && v_.eog.count(v_.find("<|return|>")) &&
            v_.eog.count(v_.find("<|call|>"))) {
            v_.eog.erase(end);
            v_.tokens[size_t(end)].attr = token_attr_user_defined;
        }
    }

    void collect_special_tokens() {
        for (int32_t id = 0; id < int32_t(v_.tokens.size()); ++id) {
            if (v_.attr(id) & (token_attr_control | token_attr_user_defined | token_attr_unknown)) {
                v_.special_tokens.push_back(id);
            }
        }
        std::stable_sort(
            v_.special_tokens.begin(), v_.special_tokens.end(), [&](int32_t a, int32_t b) {
                return v_.tokens[size_t(a)].text.size() > v_.tokens[size_t(b)].text.size();
            });
        for (size_t k = 0; k < v_.special_tokens.size(); ++k) {
            v_.special_trie.add(v_.tokens[size_t(v_.special_tokens[k])].text, int32_t(k));
        }
    }

    void set_attr(std::string_view text, uint32_t attr, bool on) {
        const int32_t id = v_.find(text);
        if (id == kNoToken) return;
        uint32_t& a = v_.tokens[size_t(id)].attr;
        a = on ? (a | attr) : (a & ~attr);
    }

    // Whitespace-eating rules llama.cpp applies by model name (the GGUF does not carry them).
    void apply_model_specific_attributes() {
        std::string name(file_.get_string("general.name").value_or(""));
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return char(std::tolower(c)); });
        const std::string arch(file_.get_string("general.architecture").value_or(""));
        auto contains = [](std::string_view s, std::initializer_list<std::string_view> parts) {
            return std::any_of(parts.begin(), parts.end(),
                               [&](std::string_view p) { return s.find(p) != s.npos; });
        };
        if (contains(v_.pre, {"jina-v2-de", "jina-v2-es", "jina-v2-code"}) ||
            contains(arch, {"nomic-bert-moe", "jina-bert-v3"})) {
            set_attr("<mask>", token_attr_lstrip, true);
        } else if (contains(name, {"phi-3", "phi3"})) {
            for (const int32_t id : v_.special_tokens)
                v_.tokens[size_t(id)].attr |= token_attr_rstrip;
            set_attr("</s>", token_attr_rstrip, true);
            for (const char* text : {"<unk>", "<s>", "<|endoftext|>"}) {
                set_attr(text, token_attr_rstrip, false);
            }
        } else if (contains(name, {"modern-bert"})) {
            set_attr("[MASK]", token_attr_lstrip, true);
        }
    }

    const gguf::GgufFile& file_;
    Vocab::Impl& v_;
    bool force_add_bos_ = false;
};

}  // namespace

Vocab Vocab::from_gguf(const gguf::GgufFile& file) {
    auto impl = std::make_shared<Impl>();
    Loader(file, *impl).load();
    return Vocab(std::move(impl));
}

}  // namespace mw
