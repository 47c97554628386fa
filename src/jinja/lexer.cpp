#include "tessera/jinja/lexer.h"

#include <cstdint>

#include "tessera/jinja/error.h"

namespace tessera::jinja {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

[[noreturn]] void syntax_error(std::string message, int line) {
  throw Error(ErrorKind::kSyntax, std::move(message), line);
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

class Lexer {
 public:
  Lexer(std::string_view src, const LexOptions& opt) : src_(src), opt_(opt) {}

  std::vector<Token> run() {
    bool strip_next = false;     // the previous tag ended with '-': strip all leading whitespace
    bool trim_newline = false;   // trim_blocks after the previous block/comment tag
    bool line_starting = true;   // the text starts at the beginning of a line
    while (pos_ <= src_.size()) {
      const size_t open = find_open(pos_);
      std::string text(src_.substr(pos_, open - pos_));
      count_lines(pos_, open);
      if (strip_next) {
        size_t k = 0;
        while (k < text.size() && is_space(text[k])) ++k;
        line_starting = k > 0 && text[k - 1] == '\n' ? true : (k > 0 ? false : line_starting);
        text.erase(0, k);
      } else if (trim_newline && !text.empty() && text[0] == '\n') {
        text.erase(0, 1);
        line_starting = true;
      }
      if (open == src_.size()) {
        emit_text(std::move(text));
        break;
      }
      const char type = src_[open + 1];  // '{', '%' or '#'
      size_t p = open + 2;
      const char mod = p < src_.size() ? src_[p] : '\0';
      if (mod == '-') {
        size_t e = text.size();
        while (e > 0 && is_space(text[e - 1])) --e;
        text.resize(e);
        ++p;
      } else {
        if (mod == '+') ++p;
        if (type != '{' && mod != '+' && opt_.lstrip_blocks) lstrip_line(text, line_starting);
      }
      emit_text(std::move(text));
      pos_ = p;
      char end_mod = '\0';
      if (type == '#') {
        end_mod = skip_comment();
      } else if (type == '%' && is_raw_tag(pos_)) {
        end_mod = lex_raw();
      } else {
        end_mod = lex_tag(type == '{');
      }
      strip_next = end_mod == '-';
      trim_newline = type != '{' && end_mod != '+' && opt_.trim_blocks;
      line_starting = false;
    }
    tokens_.push_back({TokenKind::kEof, "", line_});
    return std::move(tokens_);
  }

 private:
  // The position of the next "{{", "{%" or "{#" at or after `from`, or src_.size().
  size_t find_open(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return src_.size();
  }

  void count_lines(size_t from, size_t to) {
    for (size_t i = from; i < to && i < src_.size(); ++i) line_ += src_[i] == '\n' ? 1 : 0;
  }

  // lstrip_blocks: drop the spaces and tabs between the line's start and the tag.
  static void lstrip_line(std::string& text, bool line_starting) {
    const size_t nl = text.rfind('\n');
    if (nl == std::string::npos && !line_starting) return;
    const size_t start = nl == std::string::npos ? 0 : nl + 1;
    for (size_t i = start; i < text.size(); ++i) {
      if (text[i] != ' ' && text[i] != '\t') return;
    }
    text.resize(start);
  }

  void emit_text(std::string text) {
    if (!text.empty()) tokens_.push_back({TokenKind::kText, std::move(text), line_});
  }

  // Whether the block tag whose body starts at `p` is `{% raw %}` (any modifiers).
  bool is_raw_tag(size_t p) const {
    while (p < src_.size() && is_space(src_[p])) ++p;
    if (src_.substr(p, 3) != "raw") return false;
    p += 3;
    while (p < src_.size() && is_space(src_[p])) ++p;
    return src_.substr(p).starts_with("%}") || src_.substr(p).starts_with("-%}") ||
           src_.substr(p).starts_with("+%}");
  }

  // `{% raw %}...{% endraw %}`: the body is text, tags and all. Returns the endraw tag's end
  // modifier; `{% raw -%}` and `{%- endraw %}` strip the body's whitespace on that side.
  char lex_raw() {
    const int start_line = line_;
    const size_t open_end = src_.find("%}", pos_);
    const bool strip_front = src_[open_end - 1] == '-';
    size_t body = open_end + 2;
    size_t search = body;
    while (true) {
      const size_t tag = src_.find("{%", search);
      if (tag == std::string_view::npos) syntax_error("{% raw %} without {% endraw %}", start_line);
      size_t p = tag + 2;
      const bool strip_back = p < src_.size() && src_[p] == '-';
      if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
      while (p < src_.size() && is_space(src_[p])) ++p;
      if (src_.substr(p, 6) != "endraw") {
        search = tag + 2;
        continue;
      }
      p += 6;
      while (p < src_.size() && is_space(src_[p])) ++p;
      char mod = '\0';
      if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) mod = src_[p++];
      if (src_.substr(p, 2) != "%}") syntax_error("malformed {% endraw %}", line_);
      std::string text(src_.substr(body, tag - body));
      if (strip_front) {
        size_t k = 0;
        while (k < text.size() && is_space(text[k])) ++k;
        text.erase(0, k);
      }
      if (strip_back) {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (opt_.lstrip_blocks) {
        lstrip_line(text, false);
      }
      count_lines(pos_, p + 2);
      emit_text(std::move(text));
      pos_ = p + 2;
      return mod;
    }
  }

  // Skips a comment body; returns the modifier before "#}" ('-', '+' or '\0').
  char skip_comment() {
    const int start_line = line_;
    const size_t close = src_.find("#}", pos_);
    if (close == std::string_view::npos) syntax_error("unterminated comment {# ... #}", start_line);
    count_lines(pos_, close);
    const char mod = close > pos_ ? src_[close - 1] : '\0';
    pos_ = close + 2;
    return mod == '-' || mod == '+' ? mod : '\0';
  }

  // Tokenizes the inside of {{ }} (is_var) or {% %}; returns the end modifier.
  char lex_tag(bool is_var) {
    const int start_line = line_;
    tokens_.push_back({is_var ? TokenKind::kVarBegin : TokenKind::kBlockBegin, "", line_});
    std::string balance;  // open brackets, innermost last
    while (true) {
      while (pos_ < src_.size() && is_space(src_[pos_])) {
        if (src_[pos_] == '\n') ++line_;
        ++pos_;
      }
      if (pos_ >= src_.size()) {
        syntax_error(is_var ? "unterminated {{ ... }}" : "unterminated {% ... %}", start_line);
      }
      const std::string_view rest = src_.substr(pos_);
      if (balance.empty()) {
        const std::string_view close = is_var ? "}}" : "%}";
        for (const char mod : {'-', '+'}) {
          if (rest.size() >= 3 && rest[0] == mod && rest.substr(1, 2) == close &&
              (mod == '-' || !is_var)) {
            pos_ += 3;
            tokens_.push_back({is_var ? TokenKind::kVarEnd : TokenKind::kBlockEnd, "", line_});
            return mod;
          }
        }
        if (rest.starts_with(close)) {
          pos_ += 2;
          tokens_.push_back({is_var ? TokenKind::kVarEnd : TokenKind::kBlockEnd, "", line_});
          return '\0';
        }
        if (rest.starts_with(is_var ? "%}" : "}}")) {
          syntax_error(std::string("unexpected '") + std::string(rest.substr(0, 2)) + "'", line_);
        }
      }
      lex_one(balance);
    }
  }

  void lex_one(std::string& balance) {
    const char c = src_[pos_];
    if (is_name_start(c)) {
      size_t e = pos_ + 1;
      while (e < src_.size() && (is_name_start(src_[e]) || is_digit(src_[e]))) ++e;
      tokens_.push_back({TokenKind::kName, std::string(src_.substr(pos_, e - pos_)), line_});
      pos_ = e;
      return;
    }
    if (is_digit(c)) {
      lex_number();
      return;
    }
    if (c == '\'' || c == '"') {
      lex_string(c);
      return;
    }
    static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
    for (std::string_view op : kTwo) {
      if (src_.substr(pos_).starts_with(op)) {
        tokens_.push_back({TokenKind::kOp, std::string(op), line_});
        pos_ += 2;
        return;
      }
    }
    static constexpr std::string_view kOne = "+-*/%~<>=()[]{},.:|";
    if (kOne.find(c) == std::string_view::npos) {
      syntax_error(std::string("unexpected character '") + c + "' in a tag", line_);
    }
    if (c == '(' || c == '[' || c == '{') balance.push_back(c);
    if (c == ')' || c == ']' || c == '}') {
      const char want = c == ')' ? '(' : c == ']' ? '[' : '{';
      if (balance.empty() || balance.back() != want) {
        syntax_error(std::string("unbalanced '") + c + "'", line_);
      }
      balance.pop_back();
    }
    tokens_.push_back({TokenKind::kOp, std::string(1, c), line_});
    ++pos_;
  }

  void lex_number() {
    size_t e = pos_;
    bool is_float = false;
    while (e < src_.size() && (is_digit(src_[e]) || src_[e] == '_')) ++e;
    if (e + 1 < src_.size() && src_[e] == '.' && is_digit(src_[e + 1])) {
      is_float = true;
      ++e;
      while (e < src_.size() && (is_digit(src_[e]) || src_[e] == '_')) ++e;
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t k = e + 1;
      if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
      if (k < src_.size() && is_digit(src_[k])) {
        is_float = true;
        e = k;
        while (e < src_.size() && is_digit(src_[e])) ++e;
      }
    }
    std::string text;
    for (size_t i = pos_; i < e; ++i) {
      if (src_[i] != '_') text.push_back(src_[i]);
    }
    tokens_.push_back({is_float ? TokenKind::kFloat : TokenKind::kInt, std::move(text), line_});
    pos_ = e;
  }

  // Python string-literal escapes, as jinja2 decodes them.
  void lex_string(char quote) {
    const int start_line = line_;
    std::string out;
    size_t i = pos_ + 1;
    while (true) {
      if (i >= src_.size()) syntax_error("unterminated string literal", start_line);
      const char c = src_[i];
      if (c == quote) break;
      if (c == '\n') ++line_;
      if (c != '\\') {
        out.push_back(c);
        ++i;
        continue;
      }
      if (i + 1 >= src_.size()) syntax_error("unterminated string literal", start_line);
      const char e = src_[i + 1];
      i += 2;
      switch (e) {
        case 'n': out.push_back('\n'); break;
        case 't': out.push_back('\t'); break;
        case 'r': out.push_back('\r'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'v': out.push_back('\v'); break;
        case 'a': out.push_back('\a'); break;
        case '0': out.push_back('\0'); break;
        case '\\': out.push_back('\\'); break;
        case '\'': out.push_back('\''); break;
        case '"': out.push_back('"'); break;
        case '\n': ++line_; break;  // a line continuation
        case 'x':
        case 'u':
        case 'U': {
          const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (i + n > src_.size()) syntax_error("truncated \\" + std::string(1, e) + " escape", line_);
          uint32_t cp = 0;
          for (size_t k = 0; k < n; ++k) {
            const char h = src_[i + k];
            const int d = is_digit(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                                                : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
            if (d < 0) syntax_error("bad \\" + std::string(1, e) + " escape", line_);
            cp = cp * 16 + static_cast<uint32_t>(d);
          }
          if (cp > 0x10ffff) syntax_error("escape past U+10FFFF", line_);
          append_utf8(out, cp);
          i += n;
          break;
        }
        default:  // Python keeps unknown escapes as written
          out.push_back('\\');
          out.push_back(e);
      }
    }
    tokens_.push_back({TokenKind::kString, std::move(out), start_line});
    pos_ = i + 1;
  }

  std::string_view src_;
  LexOptions opt_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const LexOptions& options) {
  // As jinja2 does by default: newlines normalized to "\n", and one trailing newline dropped
  // (keep_trailing_newline=False).
  std::string text;
  text.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      text.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      text.push_back(source[i]);
    }
  }
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return Lexer(text, options).run();
}

}  // namespace tessera::jinja
