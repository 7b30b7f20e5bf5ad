#include "json.h"

#include <cctype>
#include <cstdio>

namespace rdmaemu {

const Json* Json::find(std::string_view key) const {
    for (const auto& [k, v] : members)
        if (k == key) return &v;
    return nullptr;
}

std::string Json::str(std::string_view key, std::string_view fallback) const {
    const Json* v = find(key);
    if (!v) return std::string(fallback);
    switch (v->kind) {
    case Kind::String:
    case Kind::Number:
        return v->text;
    case Kind::Bool:
        return v->boolean ? "true" : "false";
    default:
        return std::string(fallback);
    }
}

namespace {

class Parser {
  public:
    explicit Parser(std::string_view s) : s_(s) {}

    std::optional<Json> document() {
        Json v;
        if (!value(v, 0)) return std::nullopt;
        skip_ws();
        if (pos_ != s_.size()) return std::nullopt;
        return v;
    }

  private:
    static constexpr int kMaxDepth = 64;

    void skip_ws() {
        while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_])))
            ++pos_;
    }
    bool eat(char c) {
        skip_ws();
        if (pos_ < s_.size() && s_[pos_] == c) {
            ++pos_;
            return true;
        }
        return false;
    }
    bool literal(std::string_view word) {
        if (s_.substr(pos_, word.size()) != word) return false;
        pos_ += word.size();
        return true;
    }

    bool value(Json& v, int depth) {
        if (depth > kMaxDepth) return false;
        skip_ws();
        if (pos_ >= s_.size()) return false;
        char c = s_[pos_];
        if (c == '{') return object(v, depth);
        if (c == '[') return array(v, depth);
        if (c == '"') {
            v.kind = Json::Kind::String;
            return string(v.text);
        }
        if (literal("true") || literal("false")) {
            v.kind = Json::Kind::Bool;
            v.boolean = c == 't';
            return true;
        }
        if (literal("null")) return true;
        return number(v);
    }

    bool object(Json& v, int depth) {
        v.kind = Json::Kind::Object;
        ++pos_;
        if (eat('}')) return true;
        do {
            skip_ws();
            std::string key;
            Json member;
            if (!string(key) || !eat(':') || !value(member, depth + 1)) return false;
            v.members.emplace_back(std::move(key), std::move(member));
        } while (eat(','));
        return eat('}');
    }

    bool array(Json& v, int depth) {
        v.kind = Json::Kind::Array;
        ++pos_;
        if (eat(']')) return true;
        do {
            Json item;
            if (!value(item, depth + 1)) return false;
            v.items.push_back(std::move(item));
        } while (eat(','));
        return eat(']');
    }

    bool number(Json& v) {
        size_t start = pos_;
        while (pos_ < s_.size() &&
               (std::isdigit(static_cast<unsigned char>(s_[pos_])) ||
                std::string_view("+-.eE").find(s_[pos_]) != std::string_view::npos))
            ++pos_;
        if (pos_ == start) return false;
        v.kind = Json::Kind::Number;
        v.text = s_.substr(start, pos_ - start);
        return true;
    }

    // Escapes other than \uXXXX decode; \uXXXX stays as written (only names and counts here).
    bool string(std::string& out) {
        if (pos_ >= s_.size() || s_[pos_] != '"') return false;
        ++pos_;
        while (pos_ < s_.size()) {
            char c = s_[pos_++];
            if (c == '"') return true;
            if (c != '\\') {
                out += c;
                continue;
            }
            if (pos_ >= s_.size()) return false;
            char e = s_[pos_++];
            switch (e) {
            case 'n':
                out += '\n';
                break;
            case 't':
                out += '\t';
                break;
            case 'r':
                out += '\r';
                break;
            case 'b':
                out += '\b';
                break;
            case 'f':
                out += '\f';
                break;
            case 'u':
                out += "\\u";
                break;
            default:
                out += e;
                break;
            }
        }
        return false;
    }

    std::string_view s_;
    size_t pos_ = 0;
};

} // namespace

std::optional<Json> parse_json(std::string_view text) {
    return Parser(text).document();
}

std::string json_quote(std::string_view s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(c));
            out += buf;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

} // namespace rdmaemu
