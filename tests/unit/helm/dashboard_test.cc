// The Grafana dashboard shipped in the chart: provisionable by the Grafana sidecar as is (a
// `datasource` variable, no import-wizard __inputs), every panel queries Prometheus through that
// variable, and the queries cover every metric the issue names and only metrics the operator
// exports (a typo in a metric name is a panel that is silently empty).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/unit/helm/command.h"

namespace lockstep::helmtest {
namespace {

using nlohmann::json;

// The series the operator exports (architecture.md section 8), as PromQL refers to them.
const std::set<std::string> kExported = {
    "controller_runtime_reconcile_total",
    "controller_runtime_reconcile_errors_total",
    "controller_runtime_reconcile_time_seconds_bucket",
    "workqueue_depth",
    "workqueue_adds_total",
    "workqueue_queue_duration_seconds_bucket",
    "workqueue_work_duration_seconds_bucket",
    "rest_client_requests_total",
    "rest_client_request_duration_seconds_bucket",
    "leader_election_master_status",
    "lockstep_jobs",
    "lockstep_job_outcomes_total",
    "lockstep_job_time_to_running_seconds_bucket",
    "lockstep_scheduling_attempts_total",
    "lockstep_gang_scheduling_duration_seconds_bucket",
    "lockstep_pending_gangs",
    "lockstep_gpus",
    "lockstep_gpus_fragmented",
    "lockstep_restarts_total",
    "lockstep_node_failures_detected_total",
    "lockstep_nodes_silent",
    "lockstep_recovery_duration_seconds_bucket",
    "lockstep_detection_delay_seconds_bucket",
    "lockstep_job_progress_ratio",
    "lockstep_job_samples_per_second",
    "lockstep_job_goodput_ratio",
    "lockstep_goodput_lost_seconds_total",
    "lockstep_goodput_lost_gpu_seconds_total",
};

json LoadDashboard() {
  const std::string text = ReadFile(SourcePath("helm/lockstep/dashboards/lockstep.json"));
  return json::parse(text, nullptr, /*allow_exceptions=*/false);
}

std::vector<json> QueryPanels(const json& dashboard) {
  std::vector<json> panels;
  for (const json& panel : dashboard.value("panels", json::array())) {
    if (panel.value("type", "") != "row") panels.push_back(panel);
  }
  return panels;
}

// Metric names in a PromQL expression: identifiers with one of the operator's prefixes.
std::set<std::string> MetricsIn(const std::string& expr) {
  static const std::regex kMetric(
      R"(\b((lockstep|controller_runtime|workqueue|rest_client|leader_election)_[a-z_]+)\b)");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), kMetric);
       it != std::sregex_iterator(); ++it) {
    names.insert((*it)[1].str());
  }
  return names;
}

bool Balanced(const std::string& expr) {
  std::string stack;
  const std::map<char, char> close_to_open = {{')', '('}, {']', '['}, {'}', '{'}};
  bool in_string = false;
  for (char c : expr) {
    if (c == '"') in_string = !in_string;
    if (in_string) continue;
    if (c == '(' || c == '[' || c == '{') stack.push_back(c);
    if (close_to_open.count(c) != 0) {
      if (stack.empty() || stack.back() != close_to_open.at(c)) return false;
      stack.pop_back();
    }
  }
  return stack.empty() && !in_string;
}

TEST(GrafanaDashboard, IsProvisionableWithoutTheImportWizard) {
  const json dashboard = LoadDashboard();
  ASSERT_FALSE(dashboard.is_discarded()) << "dashboards/lockstep.json is not valid JSON";
  EXPECT_FALSE(dashboard.contains("__inputs"));
  EXPECT_FALSE(dashboard.contains("__requires"));
  EXPECT_EQ(dashboard.dump().find("DS_PROMETHEUS"), std::string::npos);
  EXPECT_EQ(dashboard.value("title", ""), "Lockstep");
  EXPECT_FALSE(dashboard.value("uid", "").empty());

  int datasource_vars = 0;
  for (const json& var : dashboard["templating"]["list"]) {
    if (var.value("name", "") != "datasource") continue;
    ++datasource_vars;
    EXPECT_EQ(var.value("type", ""), "datasource");
    EXPECT_EQ(var.value("query", ""), "prometheus");
  }
  EXPECT_EQ(datasource_vars, 1);
}

TEST(GrafanaDashboard, EveryPanelQueriesPrometheusThroughTheVariable) {
  const json dashboard = LoadDashboard();
  ASSERT_FALSE(dashboard.is_discarded());
  const std::vector<json> panels = QueryPanels(dashboard);
  ASSERT_GE(panels.size(), 15u);
  std::set<int> ids;
  for (const json& panel : panels) {
    const std::string title = panel.value("title", "");
    SCOPED_TRACE(title);
    EXPECT_FALSE(title.empty());
    EXPECT_TRUE(ids.insert(panel.value("id", -1)).second) << "duplicate panel id";
    EXPECT_EQ(panel["datasource"].value("uid", ""), "${datasource}");
    ASSERT_TRUE(panel.contains("targets"));
    ASSERT_FALSE(panel["targets"].empty()) << "panel without a query";
    for (const json& target : panel["targets"]) {
      const std::string expr = target.value("expr", "");
      EXPECT_FALSE(expr.empty());
      EXPECT_TRUE(Balanced(expr)) << expr;
      EXPECT_FALSE(MetricsIn(expr).empty()) << "no Lockstep metric in " << expr;
      EXPECT_EQ(target["datasource"].value("uid", ""), "${datasource}");
      if (expr.find("rate(") != std::string::npos) {
        EXPECT_NE(expr.find("$__rate_interval"), std::string::npos) << expr;
      }
    }
  }
}

TEST(GrafanaDashboard, CoversEveryExportedMetricAndNoOther) {
  const json dashboard = LoadDashboard();
  ASSERT_FALSE(dashboard.is_discarded());
  std::set<std::string> used;
  for (const json& panel : QueryPanels(dashboard)) {
    for (const json& target : panel["targets"]) {
      for (const std::string& name : MetricsIn(target.value("expr", ""))) {
        EXPECT_TRUE(kExported.count(name) != 0)
            << panel.value("title", "") << " queries " << name << ", which is not exported";
        used.insert(name);
      }
    }
  }
  for (const std::string& name : kExported) {
    EXPECT_TRUE(used.count(name) != 0) << "no panel shows " << name;
  }
}

TEST(GrafanaDashboard, PanelsTileTheGridWithoutOverlap) {
  const json dashboard = LoadDashboard();
  ASSERT_FALSE(dashboard.is_discarded());
  std::vector<std::vector<bool>> taken;
  for (const json& panel : dashboard["panels"]) {
    const json& pos = panel["gridPos"];
    const int x = pos.value("x", -1), y = pos.value("y", -1);
    const int w = pos.value("w", 0), h = pos.value("h", 0);
    SCOPED_TRACE(panel.value("title", ""));
    ASSERT_GE(x, 0);
    ASSERT_GE(y, 0);
    ASSERT_GT(w, 0);
    ASSERT_GT(h, 0);
    ASSERT_LE(x + w, 24);
    if (taken.size() < static_cast<size_t>(y + h)) taken.resize(y + h, std::vector<bool>(24));
    for (int row = y; row < y + h; ++row) {
      for (int col = x; col < x + w; ++col) {
        EXPECT_FALSE(taken[row][col]) << "overlaps at " << col << "," << row;
        taken[row][col] = true;
      }
    }
  }
}

}  // namespace
}  // namespace lockstep::helmtest
