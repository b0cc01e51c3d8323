#pragma once
// FlatMap<V>: a map from string to V stored as a sorted vector. Labels, annotations and resource
// lists hold a handful of entries each, and cached objects number in the tens of thousands, so
// the ~48 bytes of node overhead per std::map entry matter (see docs/kube-client.md). Offers the
// subset of std::map's interface that cache readers use; lookups are O(log n), inserts O(n).

#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lockstep::kube {

template <typename V>
class FlatMap {
 public:
  using value_type = std::pair<std::string, V>;
  using iterator = typename std::vector<value_type>::iterator;
  using const_iterator = typename std::vector<value_type>::const_iterator;

  FlatMap() = default;
  FlatMap(std::initializer_list<value_type> init) {
    for (const auto& e : init) (*this)[e.first] = e.second;
  }

  iterator begin() { return items_.begin(); }
  iterator end() { return items_.end(); }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  void clear() { items_.clear(); }
  // Drops spare capacity once an object is fully decoded.
  void shrink_to_fit() { items_.shrink_to_fit(); }
  void reserve(size_t n) { items_.reserve(n); }

  const_iterator find(std::string_view key) const {
    auto it = LowerBound(key);
    return it != items_.end() && it->first == key ? it : items_.end();
  }
  iterator find(std::string_view key) {
    auto it = LowerBound(key);
    return it != items_.end() && it->first == key ? it : items_.end();
  }
  size_t count(std::string_view key) const { return find(key) == end() ? 0 : 1; }
  bool contains(std::string_view key) const { return count(key) != 0; }
  const V& at(std::string_view key) const {
    auto it = find(key);
    if (it == end()) throw std::out_of_range("FlatMap::at: no key " + std::string(key));
    return it->second;
  }
  V& operator[](std::string_view key) {
    auto it = LowerBound(key);
    if (it == items_.end() || it->first != key) it = items_.emplace(it, std::string(key), V());
    return it->second;
  }
  // Inserts unless the key exists, like std::map::emplace.
  std::pair<iterator, bool> emplace(std::string key, V value) {
    auto it = LowerBound(key);
    if (it != items_.end() && it->first == key) return {it, false};
    return {items_.emplace(it, std::move(key), std::move(value)), true};
  }
  size_t erase(std::string_view key) {
    auto it = find(key);
    if (it == end()) return 0;
    items_.erase(it);
    return 1;
  }

  friend bool operator==(const FlatMap& a, const FlatMap& b) { return a.items_ == b.items_; }

 private:
  const_iterator LowerBound(std::string_view key) const {
    return std::lower_bound(items_.begin(), items_.end(), key,
                            [](const value_type& e, std::string_view k) { return e.first < k; });
  }
  iterator LowerBound(std::string_view key) {
    return std::lower_bound(items_.begin(), items_.end(), key,
                            [](const value_type& e, std::string_view k) { return e.first < k; });
  }

  std::vector<value_type> items_;
};

}  // namespace lockstep::kube
