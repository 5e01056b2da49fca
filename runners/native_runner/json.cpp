#include "json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace eb {

bool Json::as_bool() const {
    if (type_ != Type::Bool) throw JsonError("expected a boolean");
    return bool_;
}

int64_t Json::as_int() const {
    if (type_ == Type::Int) return int_;
    if (type_ == Type::Double && std::floor(double_) == double_ && std::fabs(double_) < 9e15)
        return static_cast<int64_t>(double_);
    throw JsonError("expected an integer");
}

double Json::as_double() const {
    if (type_ == Type::Int) return static_cast<double>(int_);
    if (type_ == Type::Double) return double_;
    throw JsonError("expected a number");
}

const std::string& Json::as_string() const {
    if (type_ != Type::String) throw JsonError("expected a string");
    return string_;
}

const std::vector<Json>& Json::items() const {
    if (type_ != Type::Array) throw JsonError("expected an array");
    return items_;
}

const std::vector<std::pair<std::string, Json>>& Json::members() const {
    if (type_ != Type::Object) throw JsonError("expected an object");
    return members_;
}

const Json* Json::find(const std::string& key) const {
    if (type_ != Type::Object) return nullptr;
    for (const auto& member : members_)
        if (member.first == key) return &member.second;
    return nullptr;
}

Json& Json::set(const std::string& key, Json value) {
    if (type_ != Type::Object) throw JsonError("set on a non-object");
    for (auto& member : members_)
        if (member.first == key) {
            member.second = std::move(value);
            return member.second;
        }
    members_.emplace_back(key, std::move(value));
    return members_.back().second;
}

void Json::push(Json value) {
    if (type_ != Type::Array) throw JsonError("push on a non-array");
    items_.push_back(std::move(value));
}

size_t Json::size() const {
    if (type_ == Type::Array) return items_.size();
    if (type_ == Type::Object) return members_.size();
    return 0;
}

// --- writing ---------------------------------------------------------------------------------

std::string json_quote(const std::string& text) {
    std::string out = "\"";
    for (unsigned char c : text) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += static_cast<char>(c);  // UTF-8 passes through
                }
        }
    }
    return out + "\"";
}

void Json::dump_to(std::string& out) const {
    switch (type_) {
        case Type::Null: out += "null"; break;
        case Type::Bool: out += bool_ ? "true" : "false"; break;
        case Type::Int: out += std::to_string(int_); break;
        case Type::Double: {
            if (!std::isfinite(double_)) {
                out += "null";  // JSON has no NaN or infinity
                break;
            }
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.17g", double_);
            std::string text = buf;
            if (text.find_first_of(".eE") == std::string::npos) text += ".0";
            out += text;
            break;
        }
        case Type::String: out += json_quote(string_); break;
        case Type::Array: {
            out += '[';
            for (size_t i = 0; i < items_.size(); ++i) {
                if (i) out += ',';
                items_[i].dump_to(out);
            }
            out += ']';
            break;
        }
        case Type::Object: {
            out += '{';
            for (size_t i = 0; i < members_.size(); ++i) {
                if (i) out += ',';
                out += json_quote(members_[i].first);
                out += ':';
                members_[i].second.dump_to(out);
            }
            out += '}';
            break;
        }
    }
}

std::string Json::dump() const {
    std::string out;
    dump_to(out);
    return out;
}

// --- parsing ---------------------------------------------------------------------------------

namespace {

class Parser {
public:
    explicit Parser(const std::string& text) : text_(text) {}

    Json document() {
        Json value = parse_value(0);
        skip_space();
        if (pos_ != text_.size()) fail("trailing characters");
        return value;
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw JsonError("invalid JSON at character " + std::to_string(pos_) + ": " + what);
    }

    void skip_space() {
        while (pos_ < text_.size() &&
               (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\r' ||
                text_[pos_] == '\t'))
            ++pos_;
    }

    bool consume(const char* word) {
        size_t n = std::char_traits<char>::length(word);
        if (text_.compare(pos_, n, word) == 0) {
            pos_ += n;
            return true;
        }
        return false;
    }

    Json parse_value(int depth) {
        if (depth > 64) fail("nested too deeply");
        skip_space();
        if (pos_ >= text_.size()) fail("unexpected end");
        char c = text_[pos_];
        if (c == '{') return parse_object(depth);
        if (c == '[') return parse_array(depth);
        if (c == '"') return Json(parse_string());
        if (consume("true")) return Json(true);
        if (consume("false")) return Json(false);
        if (consume("null")) return Json();
        if (c == '-' || (c >= '0' && c <= '9')) return parse_number();
        fail(std::string("unexpected character '") + c + "'");
    }

    Json parse_object(int depth) {
        Json object = Json::object();
        ++pos_;
        skip_space();
        if (pos_ < text_.size() && text_[pos_] == '}') {
            ++pos_;
            return object;
        }
        while (true) {
            skip_space();
            if (pos_ >= text_.size() || text_[pos_] != '"') fail("expected a key");
            std::string key = parse_string();
            skip_space();
            if (pos_ >= text_.size() || text_[pos_] != ':') fail("expected ':'");
            ++pos_;
            object.set(key, parse_value(depth + 1));
            skip_space();
            if (pos_ < text_.size() && text_[pos_] == ',') {
                ++pos_;
                continue;
            }
            if (pos_ < text_.size() && text_[pos_] == '}') {
                ++pos_;
                return object;
            }
            fail("expected ',' or '}'");
        }
    }

    Json parse_array(int depth) {
        Json array = Json::array();
        ++pos_;
        skip_space();
        if (pos_ < text_.size() && text_[pos_] == ']') {
            ++pos_;
            return array;
        }
        while (true) {
            array.push(parse_value(depth + 1));
            skip_space();
            if (pos_ < text_.size() && text_[pos_] == ',') {
                ++pos_;
                continue;
            }
            if (pos_ < text_.size() && text_[pos_] == ']') {
                ++pos_;
                return array;
            }
            fail("expected ',' or ']'");
        }
    }

    static void append_utf8(std::string& out, uint32_t cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }

    uint32_t parse_hex4() {
        if (pos_ + 4 > text_.size()) fail("short \\u escape");
        uint32_t value = 0;
        for (int i = 0; i < 4; ++i) {
            char h = text_[pos_++];
            value <<= 4;
            if (h >= '0' && h <= '9') value |= h - '0';
            else if (h >= 'a' && h <= 'f') value |= h - 'a' + 10;
            else if (h >= 'A' && h <= 'F') value |= h - 'A' + 10;
            else fail("bad \\u escape");
        }
        return value;
    }

    std::string parse_string() {
        std::string out;
        ++pos_;  // opening quote
        while (true) {
            if (pos_ >= text_.size()) fail("unterminated string");
            char c = text_[pos_++];
            if (c == '"') return out;
            if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
            if (c != '\\') {
                out += c;
                continue;
            }
            if (pos_ >= text_.size()) fail("unterminated escape");
            char e = text_[pos_++];
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    uint32_t cp = parse_hex4();
                    if (cp >= 0xD800 && cp <= 0xDBFF && text_.compare(pos_, 2, "\\u") == 0) {
                        pos_ += 2;
                        uint32_t low = parse_hex4();
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                    }
                    append_utf8(out, cp);
                    break;
                }
                default: fail("bad escape");
            }
        }
    }

    Json parse_number() {
        size_t start = pos_;
        if (text_[pos_] == '-') ++pos_;
        bool integral = true;
        while (pos_ < text_.size()) {
            char c = text_[pos_];
            if (c >= '0' && c <= '9') {
                ++pos_;
            } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
                integral = false;
                ++pos_;
            } else {
                break;
            }
        }
        std::string token = text_.substr(start, pos_ - start);
        char* end = nullptr;
        if (integral && token.size() < 19) {
            long long v = std::strtoll(token.c_str(), &end, 10);
            if (end && *end == '\0') return Json(static_cast<int64_t>(v));
        }
        double d = std::strtod(token.c_str(), &end);
        if (!end || *end != '\0') fail("bad number '" + token + "'");
        return Json(d);
    }

    const std::string& text_;
    size_t pos_ = 0;
};

}  // namespace

Json Json::parse(const std::string& text) { return Parser(text).document(); }

}  // namespace eb
