#include "launcher/stores/gloo_kv_state.h"

#include <utility>

namespace lockstep::launcher::stores {
namespace {

// Horovod splits the path on '/' and needs exactly ["", scope, key].
bool SplitPath(std::string_view path, std::string* scope, std::string* key) {
  if (!path.starts_with('/')) return false;
  path.remove_prefix(1);
  size_t slash = path.find('/');
  if (slash == std::string_view::npos) return false;
  std::string_view k = path.substr(slash + 1);
  if (k.find('/') != std::string_view::npos) return false;
  *scope = std::string(path.substr(0, slash));
  *key = std::string(k);
  return true;
}

constexpr size_t kEntryOverhead = 64;

size_t EntryBytes(const std::string& scope, const std::string& key, const std::string& body) {
  return scope.size() + key.size() + body.size() + kEntryOverhead;
}

}  // namespace

GlooKvState::GlooKvState(std::map<std::string, int> scope_sizes, size_t max_stored_bytes)
    : scope_sizes_(std::move(scope_sizes)), max_stored_bytes_(max_stored_bytes) {}

KvResponse GlooKvState::Handle(std::string_view method, std::string_view path, std::string body) {
  std::string scope;
  std::string key;
  if (!SplitPath(path, &scope, &key)) return {400, ""};
  if (method == "GET") {
    auto s = cache_.find(scope);
    if (s == cache_.end()) return {404, ""};
    auto k = s->second.find(key);
    if (k == s->second.end()) return {404, ""};
    return {200, k->second};
  }
  if (method == "PUT") return Put(scope, key, std::move(body));
  if (method == "DELETE") return Delete(scope, key);
  return {405, ""};
}

KvResponse GlooKvState::Delete(const std::string& scope, const std::string& key) {
  auto size = scope_sizes_.find(scope);
  if (size != scope_sizes_.end()) {
    std::set<std::string>& done = finished_[scope];
    done.insert(key);
    if (static_cast<int>(done.size()) >= size->second) {
      EraseScope(scope);
      finished_.erase(scope);
    }
    return {200, ""};
  }
  auto s = cache_.find(scope);
  if (s != cache_.end()) {
    if (auto k = s->second.find(key); k != s->second.end()) {
      stored_bytes_ -= EntryBytes(scope, key, k->second);
      s->second.erase(k);
    }
    if (s->second.empty()) cache_.erase(s);
  }
  return {200, ""};
}

KvResponse GlooKvState::Put(const std::string& scope, const std::string& key, std::string body) {
  auto s = cache_.find(scope);
  size_t before = 0;
  if (s != cache_.end()) {
    auto k = s->second.find(key);
    if (k != s->second.end()) before = EntryBytes(scope, key, k->second);
  }
  const size_t after = EntryBytes(scope, key, body);
  if (stored_bytes_ - before + after > max_stored_bytes_) return {507, ""};
  stored_bytes_ = stored_bytes_ - before + after;
  cache_[scope][key] = std::move(body);
  return {200, ""};
}

void GlooKvState::EraseScope(const std::string& scope) {
  auto s = cache_.find(scope);
  if (s == cache_.end()) return;
  for (const auto& [key, body] : s->second) stored_bytes_ -= EntryBytes(scope, key, body);
  cache_.erase(s);
}

size_t GlooKvState::KeysIn(const std::string& scope) const {
  auto s = cache_.find(scope);
  return s == cache_.end() ? 0 : s->second.size();
}

}  // namespace lockstep::launcher::stores
