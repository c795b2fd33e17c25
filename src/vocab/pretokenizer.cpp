#include "vocab/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <array>

#include "base/error.h"
#include "vocab/unicode.h"

namespace mw::tokenizer {

namespace {

// GPT-2's expression; llama.cpp (and we) run it as a hand-written scanner.
const char* const kGpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
// Llama 3 (case-insensitive contractions spelled out); also a hand-written scanner.
const char* const kLlama3 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// Qwen 2: Llama 3 with single digits; runs as a regular expression.
const char* const kQwen2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kTekkenWords =
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|"
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|";
const char* const kContractions = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";

// DeepSeek LLM's cased-letter class and CJK ranges, as codepoints (the originals are literal
// characters, several of which have canonical twins that must not be confused).
const char* const kDeepseekLetters =
    "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}"
    "\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}"
    "\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}"
    "\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}"
    "\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}"
    "\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}"
    "\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}"
    "\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}"
    "\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}"
    "\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}"
    "\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}"
    "\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}"
    "\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}"
    "\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}"
    "\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}"
    "\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}"
    "\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}"
    "\\x{1E900}-\\x{1E943}]+";
const char* const kDeepseekPunct =
    "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+";
const char* const kDeepseekCjk = "[\\x{4E00}-\\x{9FA5}\\x{0800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+";
const char* const kBloom =
    " ?[^(\\s|.,!?\\x{2026}\\x{3002}\\x{FF0C}\\x{3001}\\x{0964}\\x{06D4}\\x{060C})]+";

struct PreFamily {
    std::vector<const char*> names;
    std::vector<std::string> regexes;
    bool ignore_merges = false;
    bool add_bos = false;
    bool clean_spaces = true;
    bool bos_disabled = false;
    bool spm_style = false;
};

// llama.cpp's pre-tokenizers by tokenizer.ggml.pre name. clean_spaces = false where llama.cpp
// turns the detokenizer's space clean-up off.
const std::vector<PreFamily>& pre_families() {
    static const std::string kTekken =
        std::string(kTekkenWords) +
        "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    static const std::string kGpt4o =
        "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+" +
        std::string(kContractions) +
        "?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*" + kContractions +
        "?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    static const std::string kSeedCoder =
        std::string(kContractions) +
        "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|"
        "\\s+(?!\\S)|\\s+";
    static const char* const kBailing =
        "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}|"
        " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+";
    // Qwen 3.5: Qwen 2 with combining marks kept inside words.
    static const char* const kQwen35 =
        "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|"
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|"
        "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    static const char* const kDeepseekV3 =
        "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?"
        "[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

    static const std::vector<PreFamily> families = {
        {.names = {"default"},
         .regexes = {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2, "\\p{N}+", "[0-9][0-9][0-9]"}},
        {.names = {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0",
                   "lfm2"},
         .regexes = {kLlama3},
         .ignore_merges = true,
         .add_bos = true},
        {.names = {"dbrx", "smaug-bpe"}, .regexes = {kLlama3}},
        {.names = {"chatglm-bpe", "glm4"}, .regexes = {kLlama3}, .bos_disabled = true},
        {.names = {"deepseek-llm"},
         .regexes = {"[\\r\\n]", kDeepseekLetters, kDeepseekPunct, "\\s+$", kDeepseekCjk,
                     "\\p{N}+"},
         .clean_spaces = false},
        {.names = {"deepseek-v3", "hunyuan-dense", "joyai-llm"},
         .regexes = {"\\p{N}{1,3}", "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+",
                     kDeepseekV3},
         .clean_spaces = false},
        {.names = {"deepseek-coder"},
         .regexes = {"[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kDeepseekCjk, "\\p{N}"},
         .clean_spaces = false},
        {.names = {"falcon"}, .regexes = {"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2, "[0-9][0-9][0-9]"}},
        {.names = {"starcoder", "refact", "codeshell", "exaone", "minerva-7b", "mellum2"},
         .regexes = {"\\p{N}", kGpt2}},
        {.names = {"command-r", "smollm"}, .regexes = {"\\p{N}", kGpt2}, .clean_spaces = false},
        {.names = {"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v1-en", "jina-v2-es",
                   "jina-v2-de", "jina-v2-code", "roberta-bpe", "a.x-4.0", "mellum", "modern-bert",
                   "exaone4", "mpt", "olmo", "jais"},
         .regexes = {kGpt2}},
        {.names = {"trillion", "granite-docling"}, .regexes = {kGpt2}, .clean_spaces = false},
        {.names = {"stablelm2", "megrez"}, .regexes = {kQwen2}},
        {.names = {"qwen35"}, .regexes = {kQwen35}, .clean_spaces = false},
        // SentencePiece-style BPE over the whole line: only newlines split the text.
        {.names = {"gemma4", "granite-embed-multi-311m"},
         .regexes = {"[^\\n]+|[\\n]+"},
         .add_bos = true,
         .spm_style = true},
        {.names = {"qwen2", "deepseek-r1-qwen", "kormo", "hunyuan", "solar-open", "grok-2"},
         .regexes = {kQwen2},
         .clean_spaces = false},
        {.names = {"bloom", "gpt3-finnish"}, .regexes = {kBloom}},
        {.names = {"poro-chat"}, .regexes = {kBloom}, .clean_spaces = false},
        {.names = {"viking"}, .regexes = {kBloom, "\\p{N}"}, .clean_spaces = false},
        {.names = {"tekken"},
         .regexes = {kTekken},
         .ignore_merges = true,
         .add_bos = true,
         .clean_spaces = false},
        {.names = {"gpt-4o", "llama4"}, .regexes = {kGpt4o}, .clean_spaces = false},
        {.names = {"seed-coder"}, .regexes = {kSeedCoder}, .clean_spaces = false},
        {.names = {"bailingmoe", "bailingmoe2", "llada-moe"},
         .regexes = {kBailing},
         .clean_spaces = false},
    };
    return families;
}

// ---- the collapsed representation ----

// Byte that stands for a non-ASCII codepoint of each category in the collapsed text.
constexpr char kCollapsedOther = char(0xD0);
constexpr char kCollapsedSpace = 0x0B;  // \v, which \s matches

struct CategoryClass {
    const char* property;  // as written in the expression
    char byte;             // its byte in the collapsed text
    const char* ascii;     // its ASCII members, as a class body
};

// The ASCII lists are llama.cpp's: its symbol list lacks '~', so \p{S} does not match '~'.
const std::array<CategoryClass, 10> kCategoryClasses = {{
    {"\\p{N}", char(0xD1), "0-9"},
    {"\\p{L}", char(0xD2), "A-Za-z"},
    {"\\p{P}", char(0xD3), "!-#%-*,-/:-;?-@\\[-\\]_\\{\\}"},
    {"\\p{M}", char(0xD4), ""},
    {"\\p{S}", char(0xD5), "\\$\\+<->\\^`\\|"},
    {"\\p{Lu}", char(0xD2), "A-Za-z"},
    {"\\p{Ll}", char(0xD2), "A-Za-z"},
    {"\\p{Lt}", char(0xD2), "A-Za-z"},
    {"\\p{Lm}", char(0xD2), "A-Za-z"},
    {"\\p{Lo}", char(0xD2), "A-Za-z"},
}};

bool uses_categories(std::string_view regex) {
    return std::any_of(
        kCategoryClasses.begin(), kCategoryClasses.end(),
        [&](const CategoryClass& c) { return regex.find(c.property) != regex.npos; });
}

char collapsed_byte(uint32_t cpt) {
    if (cpt < 0x80) return char(cpt);
    const unicode::CodepointInfo ci = unicode::info(cpt);
    if (ci.whitespace) return kCollapsedSpace;
    switch (ci.category) {
        case unicode::number:
            return char(0xD1);
        case unicode::letter:
            return char(0xD2);
        case unicode::punctuation:
            return char(0xD3);
        case unicode::mark:
            return char(0xD4);
        case unicode::symbol:
            return char(0xD5);
        default:
            return kCollapsedOther;
    }
}

// Rewrites \p{..} into classes over the collapsed bytes; tracks [..] (without nesting, as
// llama.cpp does) so a property inside a class is not wrapped in another one.
std::string collapse_regex(std::string_view regex) {
    std::string out;
    bool inside = false;
    for (size_t i = 0; i < regex.size(); ++i) {
        const char c = regex[i];
        if (c == '[' && (i == 0 || regex[i - 1] != '\\')) {
            out += '[';
            inside = true;
            continue;
        }
        if (inside && c == ']' && regex[i - 1] != '\\') {
            out += ']';
            inside = false;
            continue;
        }
        if (c == '\\' && i + 3 < regex.size() && regex[i + 1] == 'p' && regex[i + 2] == '{') {
            const size_t close = regex.find('}', i + 3);
            if (close != regex.npos && close <= i + 10) {
                const std::string_view property = regex.substr(i, close - i + 1);
                const auto* cls =
                    std::find_if(kCategoryClasses.begin(), kCategoryClasses.end(),
                                 [&](const CategoryClass& k) { return property == k.property; });
                if (cls != kCategoryClasses.end()) {
                    if (!inside) out += '[';
                    out += cls->byte;
                    out += cls->ascii;
                    if (!inside) out += ']';
                    i = close;
                    continue;
                }
            }
        }
        out += c;
    }
    return out;
}

}  // namespace

bool pre_tokenizer_config(std::string_view pre, PreTokenizerConfig& config) {
    if (pre.empty()) pre = "default";
    for (const PreFamily& family : pre_families()) {
        for (const char* name : family.names) {
            if (pre == name) {
                config.regexes = family.regexes;
                config.ignore_merges = family.ignore_merges;
                config.add_bos = family.add_bos;
                config.clean_spaces = family.clean_spaces;
                config.bos_disabled = family.bos_disabled;
                config.spm_style = family.spm_style;
                return true;
            }
        }
    }
    return false;
}

std::vector<std::string_view> known_pre_tokenizers() {
    std::vector<std::string_view> names;
    for (const PreFamily& family : pre_families()) {
        names.insert(names.end(), family.names.begin(), family.names.end());
    }
    return names;
}

// ---- rules ----

struct PreTokenizer::Rule {
    enum class Kind { gpt2, llama3, collapsed, codepoints };
    Kind kind = Kind::gpt2;
    pcre2_code* code = nullptr;

    ~Rule() { pcre2_code_free(code); }
};

PreTokenizer::PreTokenizer(const std::vector<std::string>& regexes, bool byte_encode)
    : byte_encode_(byte_encode) {
    for (const std::string& regex : regexes) {
        auto rule = std::make_unique<Rule>();
        if (regex == kGpt2) {
            rule->kind = Rule::Kind::gpt2;
        } else if (regex == kLlama3) {
            rule->kind = Rule::Kind::llama3;
        } else {
            const bool collapsed = uses_categories(regex);
            rule->kind = collapsed ? Rule::Kind::collapsed : Rule::Kind::codepoints;
            const std::string pattern = collapsed ? collapse_regex(regex) : regex;
            const uint32_t options = PCRE2_DOLLAR_ENDONLY | (collapsed ? 0u : PCRE2_UTF);
            int error = 0;
            PCRE2_SIZE error_offset = 0;
            rule->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                       options, &error, &error_offset, nullptr);
            if (!rule->code) {
                PCRE2_UCHAR message[256];
                pcre2_get_error_message(error, message, sizeof(message));
                fail(ErrorKind::unsupported, "pre-tokenizer expression \"{}\": {} at offset {}",
                     regex, reinterpret_cast<const char*>(message), error_offset);
            }
            pcre2_jit_compile(rule->code, PCRE2_JIT_COMPLETE);  // the interpreter is the fallback
            (collapsed ? need_collapsed_ : need_utf_) = true;
        }
        rules_.push_back(std::move(rule));
    }
}

PreTokenizer::~PreTokenizer() = default;

namespace {

// Splits [begin, end) of the codepoints with a hand-written scanner and appends the piece
// lengths. Positions outside the piece read as "nothing" (no category, not whitespace).
class Scanner {
  public:
    Scanner(const std::vector<uint32_t>& cpts, size_t begin, size_t end, std::vector<size_t>& out)
        : cpts_(cpts), end_(end), prev_(begin), out_(out) {}

    static constexpr uint32_t kOutside = 0xFFFFFFFF;

    uint32_t cpt(size_t pos) const { return pos < end_ ? cpts_[pos] : kOutside; }
    bool inside(size_t pos) const { return pos < end_; }
    unicode::CodepointInfo info(size_t pos) const {
        return pos < end_ ? unicode::info(cpts_[pos]) : unicode::CodepointInfo{};
    }
    bool letter(size_t pos) const { return inside(pos) && info(pos).is_letter(); }
    bool number(size_t pos) const { return inside(pos) && info(pos).is_number(); }
    bool space(size_t pos) const { return inside(pos) && info(pos).whitespace; }
    // [^\s\p{L}\p{N}] for a position inside the piece.
    bool other(size_t pos) const {
        if (!inside(pos)) return false;
        const auto ci = info(pos);
        return !(ci.whitespace || ci.is_letter() || ci.is_number());
    }
    size_t end() const { return end_; }

    // Ends the current word at `pos` (nothing for an empty word).
    void cut(size_t pos) {
        if (pos > prev_) out_.push_back(pos - prev_);
        prev_ = pos;
    }

  private:
    const std::vector<uint32_t>& cpts_;
    size_t end_;
    size_t prev_;
    std::vector<size_t>& out_;
};

// 's|'t|'re|'ve|'m|'ll|'d at pos (optionally case-insensitive): the length matched, or 0.
size_t contraction(const Scanner& s, size_t pos, bool any_case) {
    if (s.cpt(pos) != '\'' || !s.inside(pos + 1)) return 0;
    auto lower = [&](size_t p) { return any_case ? unicode::to_lower(s.cpt(p)) : s.cpt(p); };
    const uint32_t a = lower(pos + 1);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (!s.inside(pos + 2)) return 0;
    const uint32_t b = lower(pos + 2);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
void scan_gpt2(Scanner& s, size_t pos) {
    while (pos < s.end()) {
        if (size_t n = contraction(s, pos, false)) {
            pos += n;
            s.cut(pos);
            continue;
        }
        const size_t first = s.cpt(pos) == ' ' ? pos + 1 : pos;  // after the optional space
        if (s.letter(first) || s.number(first) || s.other(first)) {
            const bool letter = s.letter(first), number = s.number(first);
            pos = first;
            while (letter ? s.letter(pos) : number ? s.number(pos) : s.other(pos)) ++pos;
            s.cut(pos);
            continue;
        }
        size_t spaces = 0;
        while (s.space(pos + spaces)) ++spaces;
        if (spaces > 1 && s.inside(pos + spaces)) {
            pos += spaces - 1;  // \s+(?!\S): leave the last space to the next word
        } else if (spaces > 0) {
            pos += spaces;
        } else {
            ++pos;  // nothing matches (e.g. an unassigned codepoint after a space)
        }
        s.cut(pos);
    }
}

// Llama 3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//          ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
void scan_llama3(Scanner& s, size_t pos) {
    auto newline = [&](size_t p) { return s.cpt(p) == '\r' || s.cpt(p) == '\n'; };
    while (pos < s.end()) {
        if (size_t n = contraction(s, pos, true)) {
            pos += n;
            s.cut(pos);
            continue;
        }
        if (!newline(pos) && !s.number(pos) && (s.letter(pos) || s.letter(pos + 1))) {
            ++pos;
            while (s.letter(pos)) ++pos;
            s.cut(pos);
            continue;
        }
        if (s.number(pos)) {
            size_t group_start = pos;
            while (s.number(pos)) {
                if (++pos - group_start >= 3) {
                    s.cut(pos);
                    group_start = pos;
                }
            }
            s.cut(pos);
            continue;
        }
        // The optional space may be followed by the end of the piece: then llama.cpp still
        // takes the space alone here.
        const size_t first = s.cpt(pos) == ' ' ? pos + 1 : pos;
        const auto fi = s.info(first);
        if (!(fi.whitespace || fi.is_letter() || fi.is_number())) {
            pos = first;
            while (s.other(pos)) ++pos;
            while (newline(pos)) ++pos;
            s.cut(pos);
            continue;
        }
        size_t spaces = 0, after_last_newline = 0;
        while (s.space(pos + spaces)) {
            if (newline(pos + spaces)) after_last_newline = pos + spaces + 1;
            ++spaces;
        }
        if (after_last_newline > 0) {
            pos = after_last_newline;  // \s*[\r\n]+
        } else if (spaces > 1 && s.inside(pos + spaces)) {
            pos += spaces - 1;
        } else if (spaces > 0) {
            pos += spaces;
        } else {
            ++pos;
        }
        s.cut(pos);
    }
}

// Runs a compiled expression over one piece of `subject` (units = bytes) and appends the
// lengths of matches and of the text between them, converted to codepoints by `to_cpts`.
template <typename ToCpts>
void split_with_pcre(pcre2_code* code, pcre2_match_data* match, const char* subject, size_t length,
                     uint32_t options, ToCpts to_cpts, std::vector<size_t>& out) {
    const auto* s = reinterpret_cast<PCRE2_SPTR>(subject);
    size_t piece_start = 0, pos = 0;
    while (pos < length) {
        int rc = pcre2_match(code, s, length, pos, options, match, nullptr);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
            rc = pcre2_match(code, s, length, pos, options | PCRE2_NO_JIT, match, nullptr);
        }
        if (rc < 0) break;  // no match, or a resource limit: the rest stays one piece
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(match);
        const size_t m_begin = ov[0], m_end = ov[1];
        if (m_end == m_begin) {  // an empty match splits nothing: look further on
            pos = m_end + 1;
            while (pos < length && (options & PCRE2_NO_UTF_CHECK) && (s[pos] & 0xC0) == 0x80) ++pos;
            continue;
        }
        if (m_begin > piece_start) out.push_back(to_cpts(piece_start, m_begin));
        out.push_back(to_cpts(m_begin, m_end));
        piece_start = pos = m_end;
    }
    if (piece_start < length) out.push_back(to_cpts(piece_start, length));
}

struct MatchData {
    pcre2_match_data* data;
    explicit MatchData(pcre2_code* code)
        : data(pcre2_match_data_create_from_pattern(code, nullptr)) {}
    ~MatchData() { pcre2_match_data_free(data); }
};

}  // namespace

void PreTokenizer::split(std::string_view text, std::vector<std::string>& words) const {
    const std::vector<uint32_t> cpts = unicode::decode_utf8(text);

    std::string collapsed;
    if (need_collapsed_) {
        collapsed.resize(cpts.size());
        for (size_t i = 0; i < cpts.size(); ++i) collapsed[i] = collapsed_byte(cpts[i]);
    }
    // The real codepoints for expressions without categories, non-ASCII whitespace as \v
    // (std::regex's \s, which llama.cpp uses, is ASCII-only), and a byte offset per codepoint.
    std::string utf;
    std::vector<size_t> utf_offset;
    if (need_utf_) {
        utf_offset.reserve(cpts.size() + 1);
        for (uint32_t c : cpts) {
            utf_offset.push_back(utf.size());
            if (c >= 0x80 && unicode::info(c).whitespace) c = 0x0B;
            if (c >= 0xD800 && c <= 0xDFFF) c = unicode::kReplacementChar;  // PCRE2 needs UTF-8
            unicode::append_utf8(utf, c);
        }
        utf_offset.push_back(utf.size());
    }

    std::vector<size_t> pieces = {cpts.size()};
    std::vector<size_t> next;
    for (const auto& rule : rules_) {
        next.clear();
        next.reserve(pieces.size() * 2);
        std::unique_ptr<MatchData> match;
        if (rule->code) match = std::make_unique<MatchData>(rule->code);
        size_t start = 0;
        for (const size_t length : pieces) {
            const size_t end = start + length;
            switch (rule->kind) {
                case Rule::Kind::gpt2: {
                    Scanner s(cpts, start, end, next);
                    scan_gpt2(s, start);
                    break;
                }
                case Rule::Kind::llama3: {
                    Scanner s(cpts, start, end, next);
                    scan_llama3(s, start);
                    break;
                }
                case Rule::Kind::collapsed:
                    split_with_pcre(
                        rule->code, match->data, collapsed.data() + start, length, 0,
                        [](size_t a, size_t b) { return b - a; }, next);
                    break;
                case Rule::Kind::codepoints: {
                    const size_t base = utf_offset[start];
                    auto to_cpts = [&](size_t a, size_t b) {
                        auto index = [&](size_t byte) {
                            return size_t(std::lower_bound(utf_offset.begin() + start,
                                                           utf_offset.begin() + end + 1,
                                                           base + byte) -
                                          utf_offset.begin());
                        };
                        return index(b) - index(a);
                    };
                    split_with_pcre(rule->code, match->data, utf.data() + base,
                                    utf_offset[end] - base, PCRE2_NO_UTF_CHECK, to_cpts, next);
                    break;
                }
            }
            start = end;
        }
        pieces.swap(next);
    }

    // Each word as the GPT-2 byte characters of its UTF-8 bytes, or as that UTF-8 itself.
    words.clear();
    words.reserve(pieces.size());
    size_t start = 0;
    std::string bytes;
    for (const size_t length : pieces) {
        bytes.clear();
        for (size_t i = start; i < start + length; ++i) unicode::append_utf8(bytes, cpts[i]);
        std::string& word = words.emplace_back();
        if (byte_encode_) {
            for (const char b : bytes) word += unicode::byte_to_bpe_char(uint8_t(b));
        } else {
            word = bytes;
        }
        start += length;
    }
}

}  // namespace mw::tokenizer
