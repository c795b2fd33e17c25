// Vocab: splitting text at special tokens, dispatch to the tokenizer of the vocab type, pieces
// and detokenization (as llama.cpp's llama_vocab does), and the streaming detokenizer.
#include "vocab/vocab.h"

#include <limits>

#include "base/error.h"
#include "vocab/unicode.h"
#include "vocab/vocab_impl.h"

namespace mw {

namespace {

const char* const kEscapedSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// isspace() in the C locale, which llama.cpp's lstrip/rstrip rules use.
bool is_c_space(char c) {
    return c == ' ' || (c >= '\t' && c <= '\r');
}

// A piece of the input: raw text, or a special token found in it.
struct Fragment {
    int32_t token;  // kNoToken for raw text
    size_t offset;
    size_t length;
};

// The special tokens whose text occurs somewhere in `text`; only those can split it.
std::vector<bool> occurring_special_tokens(const Vocab::Impl& v, std::string_view text,
                                           bool parse_special) {
    std::vector<bool> occurs(v.special_tokens.size(), false);
    v.special_trie.mark_occurring(text, occurs);
    if (!parse_special) {
        for (size_t k = 0; k < occurs.size(); ++k) {
            if (v.attr(v.special_tokens[k]) & (token_attr_control | token_attr_unknown)) {
                occurs[k] = false;
            }
        }
    }
    return occurs;
}

// llama.cpp's tokenizer_st_partition: for each special token, longest first, split every raw
// fragment at each of its occurrences (left to right); the token's lstrip/rstrip attributes
// drop whitespace next to it. Control and unknown tokens count only with parse_special.
std::vector<Fragment> partition(const Vocab::Impl& v, std::string_view text, bool parse_special) {
    std::vector<Fragment> fragments;
    if (text.empty()) return fragments;
    fragments.push_back({kNoToken, 0, text.size()});

    const std::vector<bool> occurs = occurring_special_tokens(v, text, parse_special);
    std::vector<Fragment> next;
    for (size_t k = 0; k < v.special_tokens.size(); ++k) {
        if (!occurs[k]) continue;
        const int32_t id = v.special_tokens[k];
        const std::string& special = v.tokens[size_t(id)].text;
        const uint32_t attr = v.attr(id);
        next.clear();
        for (const Fragment& f : fragments) {
            if (f.token != kNoToken) {
                next.push_back(f);
                continue;
            }
            size_t offset = f.offset, length = f.length;
            while (length > 0) {
                const size_t match = text.find(special, offset);
                if (match == text.npos || match + special.size() > offset + length) {
                    next.push_back({kNoToken, offset, length});
                    break;
                }
                size_t left = match - offset;
                if (attr & token_attr_lstrip) {
                    while (left > 0 && is_c_space(text[offset + left - 1])) --left;
                }
                if (left > 0) next.push_back({kNoToken, offset, left});
                next.push_back({id, 0, 0});
                const size_t end = offset + length;
                offset = match + special.size();
                length = end - offset;
                if (attr & token_attr_rstrip) {
                    while (length > 0 && is_c_space(text[offset])) ++offset, --length;
                }
            }
        }
        fragments.swap(next);
    }
    return fragments;
}

std::string escape_spaces(std::string_view text) {
    std::string out;
    out.reserve(text.size() + text.size() / 4);
    for (const char c : text) {
        if (c == ' ') {
            out += kEscapedSpace;
        } else {
            out += c;
        }
    }
    return out;
}

// Runs between escaped spaces are copied whole: detokenizing is on every generated token's path.
std::string unescape_spaces(std::string_view text) {
    const std::string_view escaped(kEscapedSpace);
    std::string out;
    out.reserve(text.size());
    size_t from = 0;
    for (size_t at = text.find(escaped); at != std::string_view::npos;
         at = text.find(escaped, from)) {
        out.append(text.substr(from, at - from));
        out += ' ';
        from = at + escaped.size();
    }
    out.append(text.substr(from));
    return out;
}

// Byte-level BPE text back to bytes. A character outside GPT-2's byte map is spelled out the
// way llama.cpp does it: its bytes in hex, then the whole token. For a token longer than
// kMaxEchoedToken (no real vocabulary has one) the echo is left out: it would make the piece grow
// with the square of the token's length (a fuzzed 9 KB token printed 27 MB).
constexpr size_t kMaxEchoedToken = 256;

std::string decode_byte_level(std::string_view text) {
    std::string out;
    for (const uint32_t cpt : unicode::decode_utf8(text)) {
        const int byte = unicode::bpe_char_to_byte(cpt);
        if (byte >= 0) {
            out += char(byte);
            continue;
        }
        out += "[UNK_BYTE_0x";
        for (const char c : unicode::encode_utf8(cpt)) out += fmt::format("{:02x}", uint8_t(c));
        if (text.size() <= kMaxEchoedToken) out += text;
        out += "]";
    }
    return out;
}

uint8_t byte_of_token(std::string_view text) {  // "<0xAB>", validated at load
    return uint8_t(std::stoi(std::string(text.substr(3, 2)), nullptr, 16));
}

std::string piece_of(const Vocab::Impl& v, int32_t id, bool special) {
    const uint32_t attr = v.attr(id);
    if (!special && (attr & (token_attr_unknown | token_attr_control))) return {};
    const std::string& text = v.tokens[size_t(id)].text;
    if (attr & (token_attr_unknown | token_attr_control | token_attr_user_defined)) return text;
    if (attr & token_attr_normal) {
        return v.type == VocabType::bpe && !v.spm_style ? decode_byte_level(text)
                                                        : unescape_spaces(text);
    }
    if (attr & token_attr_byte) return std::string(1, char(byte_of_token(text)));
    return {};  // unused and undefined tokens print nothing
}

// llama.cpp's clean_up_tokenization_spaces, three passes over the text in place.
void clean_spaces(std::string& t) {
    if (t.empty()) return;
    // " ?", " !", " .", " ," lose the space.
    size_t n = t.size(), total = 1;
    for (size_t i = 1; i < n; ++i) {
        const char x = t[i];
        if (t[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --total;
        t[total++] = x;
    }
    // " ' " loses both spaces.
    n = total, total = 1;
    for (size_t i = 1; i < n; ++i) {
        const char x = t[i];
        if (x == '\'' && i + 1 < n && t[i - 1] == ' ' && t[i + 1] == ' ') {
            --total;
            t[++i] = '\0';
        }
        t[total++] = x;
    }
    // " 's", " 'm", " 're", " 've" lose the space.
    n = total, total = 1;
    for (size_t i = 1; i < n; ++i) {
        const char x = t[i];
        if (t[i - 1] == ' ' && x == '\'' && i + 1 < n) {
            const char x1 = t[i + 1];
            if (x1 == 's' || x1 == 'm') {
                --total;
            } else if (x1 != 't' && x1 != 'd' && i + 2 < n) {
                const char x2 = t[i + 2];
                if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) --total;
            }
        }
        t[total++] = x;
    }
    t.resize(total);
}

}  // namespace

std::vector<int32_t> tokenize(const Vocab::Impl& v, std::string_view text, bool add_special,
                              bool parse_special) {
    const std::vector<Fragment> fragments = partition(v, text, parse_special);
    std::vector<int32_t> out;
    out.reserve(text.size() / 3 + 2);
    switch (v.type) {
        case VocabType::spm: {
            if (add_special && v.add_bos) out.push_back(v.bos);
            bool after_special = true;  // the text start counts as one: it gets the space prefix
            for (const Fragment& f : fragments) {
                if (f.token != kNoToken) {
                    out.push_back(f.token);
                    after_special = true;
                    continue;
                }
                std::string piece = v.add_space_prefix && after_special ? " " : "";
                piece += text.substr(f.offset, f.length);
                tokenizer::tokenize_spm(v, escape_spaces(piece), out);
                after_special = false;
            }
            if (add_special && v.add_eos) out.push_back(v.eos);
            break;
        }
        case VocabType::bpe: {
            if (add_special && v.add_bos) out.push_back(v.bos);
            for (const Fragment& f : fragments) {
                if (f.token != kNoToken) {
                    out.push_back(f.token);
                } else if (v.spm_style) {
                    tokenizer::tokenize_bpe(v, escape_spaces(text.substr(f.offset, f.length)), out);
                } else {
                    tokenizer::tokenize_bpe(v, text.substr(f.offset, f.length), out);
                }
            }
            if (add_special && v.add_eos) out.push_back(v.eos);
            break;
        }
        case VocabType::wpm: {
            if (add_special) out.push_back(v.bos);  // CLS
            for (const Fragment& f : fragments) {
                if (f.token != kNoToken) {
                    out.push_back(f.token);
                } else {
                    tokenizer::tokenize_wpm(v, text.substr(f.offset, f.length), out);
                }
            }
            if (add_special) out.push_back(v.sep);
            break;
        }
    }
    return out;
}

Vocab::Vocab(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

std::vector<int32_t> Vocab::tokenize(std::string_view text, bool add_special,
                                     bool parse_special) const {
    if (text.size() > size_t(std::numeric_limits<int32_t>::max())) {
        fail(ErrorKind::invalid_argument,
             "cannot tokenize {} bytes of text at once (2 GiB at most)", text.size());
    }
    return mw::tokenize(*impl_, text, add_special, parse_special);
}

std::string Vocab::token_to_piece(int32_t id, bool special) const {
    if (!impl_->valid(id)) {
        fail(ErrorKind::invalid_argument, "token id {} is outside the vocabulary (0..{})", id,
             impl_->tokens.size() - 1);
    }
    return piece_of(*impl_, id, special);
}

std::string Vocab::detokenize(std::span<const int32_t> ids, bool remove_special,
                              bool unparse_special) const {
    const Impl& v = *impl_;
    bool remove_space = v.add_space_prefix;  // the space the SPM tokenizer put in front
    if (remove_special && v.add_bos && !ids.empty() && ids.front() == v.bos) {
        remove_space = false;
        ids = ids.subspan(1);
    }
    if (remove_special && v.add_eos && !ids.empty() && ids.back() == v.eos) {
        ids = ids.first(ids.size() - 1);
    }
    std::string text;
    for (const int32_t id : ids) {
        std::string piece = token_to_piece(id, unparse_special);
        if (remove_space && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
        remove_space = false;
        text += piece;
    }
    if (v.clean_spaces) clean_spaces(text);
    return text;
}

VocabType Vocab::type() const {
    return impl_->type;
}
std::string_view Vocab::model() const {
    return impl_->model;
}
std::string_view Vocab::pre() const {
    return impl_->pre;
}
int32_t Vocab::n_tokens() const {
    return int32_t(impl_->tokens.size());
}

std::string_view Vocab::token_text(int32_t id) const {
    if (!impl_->valid(id)) fail(ErrorKind::invalid_argument, "token id {} is out of range", id);
    return impl_->tokens[size_t(id)].text;
}

float Vocab::token_score(int32_t id) const {
    if (!impl_->valid(id)) fail(ErrorKind::invalid_argument, "token id {} is out of range", id);
    return impl_->tokens[size_t(id)].score;
}

uint32_t Vocab::token_attr(int32_t id) const {
    if (!impl_->valid(id)) fail(ErrorKind::invalid_argument, "token id {} is out of range", id);
    return impl_->attr(id);
}

int32_t Vocab::find_token(std::string_view text) const {
    return impl_->find(text);
}
int32_t Vocab::bos() const {
    return impl_->bos;
}
int32_t Vocab::eos() const {
    return impl_->eos;
}
int32_t Vocab::eot() const {
    return impl_->eot;
}
int32_t Vocab::eom() const {
    return impl_->eom;
}
int32_t Vocab::unk() const {
    return impl_->unk;
}
int32_t Vocab::sep() const {
    return impl_->sep;
}
int32_t Vocab::pad() const {
    return impl_->pad;
}
int32_t Vocab::mask() const {
    return impl_->mask;
}
int32_t Vocab::newline() const {
    return impl_->newline;
}
int32_t Vocab::fim_pre() const {
    return impl_->fim_pre;
}
int32_t Vocab::fim_suf() const {
    return impl_->fim_suf;
}
int32_t Vocab::fim_mid() const {
    return impl_->fim_mid;
}
bool Vocab::add_bos() const {
    return impl_->add_bos;
}
bool Vocab::add_eos() const {
    return impl_->add_eos;
}
bool Vocab::add_space_prefix() const {
    return impl_->add_space_prefix;
}
bool Vocab::is_eog(int32_t id) const {
    return id != kNoToken && impl_->eog.count(id) > 0;
}
bool Vocab::is_control(int32_t id) const {
    return impl_->valid(id) && (impl_->attr(id) & token_attr_control);
}

// ---- streaming ----

namespace {

// Length of the valid UTF-8 sequence at s[0..n): > 0 when complete and valid; 0 when the
// bytes so far are a valid but unfinished start; -k when the first k bytes are the maximal
// invalid part (to become one U+FFFD), following Unicode's "maximal subpart" rule.
int utf8_sequence(const uint8_t* s, size_t n) {
    const uint8_t b = s[0];
    if (b < 0x80) return 1;
    int length;
    uint8_t lo = 0x80, hi = 0xBF;  // range of the second byte
    if (b >= 0xC2 && b <= 0xDF) {
        length = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
        length = 3;
        if (b == 0xE0) lo = 0xA0;
        if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        length = 4;
        if (b == 0xF0) lo = 0x90;
        if (b == 0xF4) hi = 0x8F;
    } else {
        return -1;
    }
    for (int k = 1; k < length; ++k) {
        if (size_t(k) >= n) return 0;
        const uint8_t c = s[k];
        const bool ok = k == 1 ? (c >= lo && c <= hi) : (c >= 0x80 && c <= 0xBF);
        if (!ok) return -k;
    }
    return length;
}

// Moves the complete part of `pending` to the result; at the end also the unfinished rest. Runs
// of valid sequences are copied whole.
std::string take_complete(std::string& pending, bool at_end) {
    std::string out;
    const auto* s = reinterpret_cast<const uint8_t*>(pending.data());
    const size_t n = pending.size();
    size_t i = 0, run = 0;  // [run, i): valid, not yet copied
    while (i < n) {
        const int r = utf8_sequence(s + i, n - i);
        if (r > 0) {
            i += size_t(r);
            continue;
        }
        if (r == 0 && !at_end) break;  // an unfinished character waits for the next piece
        out.append(pending, run, i - run);
        out += "\xEF\xBF\xBD";
        i = r < 0 ? i + size_t(-r) : n;
        run = i;
    }
    out.append(pending, run, i - run);
    pending.erase(0, i);
    return out;
}

}  // namespace

TokenTextStream::TokenTextStream(const Vocab& vocab, bool special)
    : vocab_(vocab), special_(special) {}

std::string TokenTextStream::push(int32_t id) {
    pending_ += vocab_.token_to_piece(id, special_);
    return take_complete(pending_, false);
}

std::string TokenTextStream::finish() {
    return take_complete(pending_, true);
}

}  // namespace mw
