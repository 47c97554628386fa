// plan_jobs without Slurm: co-located models grouped into shared jobs, ports handed out in slot
// order, each job's CPUs and memory, pinned slots, and the validation errors.
#include "tessera/cluster/job_planner.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera::cluster {
namespace job_planner_test {

ClusterModelSpec model(std::string name, int32_t max_replicas, int cpus = 1, int64_t memory_mb = 0) {
  ClusterModelSpec m;
  m.name = std::move(name);
  m.path = "/models/" + m.name + ".gguf";
  m.max_replicas = max_replicas;
  m.cpus = cpus;
  m.memory_mb = memory_mb;
  return m;
}

Result<JobPlan> plan(const std::vector<ClusterModelSpec>& models,
                     const std::vector<std::vector<std::string>>& colocate = {}, int port_base = 18100,
                     const std::vector<int64_t>& file_bytes = {}) {
  return plan_jobs({"c", models, colocate, port_base, file_bytes});
}

TEST(JobPlanner, OneJobPerSlotWithPortsInSlotOrder) {
  auto p = plan({model("a", 2), model("b", 1)});
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  ASSERT_EQ(p->slots.size(), 3u);
  EXPECT_EQ(p->jobs, 3);
  EXPECT_EQ(p->slots[0].job_name, "c-a-0");
  EXPECT_EQ(p->slots[1].job_name, "c-a-1");
  EXPECT_EQ(p->slots[2].job_name, "c-b-0");
  EXPECT_EQ(p->slots[0].port, 18100);
  EXPECT_EQ(p->slots[1].port, 18101);
  EXPECT_EQ(p->slots[2].port, 18102);
  EXPECT_EQ(p->slots[1].replica, 1);
  EXPECT_EQ(p->slots[2].path, "/models/b.gguf");
  EXPECT_EQ(p->slot_model, (std::vector<int32_t>{0, 0, 1}));
  EXPECT_EQ(p->model_slots, (std::vector<std::vector<int32_t>>{{0, 1}, {2}}));
}

TEST(JobPlanner, CoLocatedModelsShareJobsPortsMostCpusAndSummedMemory) {
  auto p = plan({model("a", 2, 2, 1000), model("x", 1), model("b", 2, 4, 500)}, {{"b", "a"}});
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  ASSERT_EQ(p->slots.size(), 5u);
  EXPECT_EQ(p->jobs, 3);  // a+b replica 0, a+b replica 1, x
  // Slots: a0 a1 x0 b0 b1; the group's ports are the ones its first slots took.
  EXPECT_EQ(p->slots[0].job_name, "c-a+b-0");
  EXPECT_EQ(p->slots[3].job_name, "c-a+b-0");
  EXPECT_EQ(p->slots[1].job_name, "c-a+b-1");
  EXPECT_EQ(p->slots[4].job_name, "c-a+b-1");
  EXPECT_EQ(p->slots[2].job_name, "c-x-0");
  EXPECT_EQ(p->slots[0].port, 18100);
  EXPECT_EQ(p->slots[3].port, 18100);
  EXPECT_EQ(p->slots[1].port, 18101);
  EXPECT_EQ(p->slots[4].port, 18101);
  EXPECT_EQ(p->slots[2].port, 18102);
  for (int s : {0, 1, 3, 4}) {
    EXPECT_EQ(p->slots[static_cast<size_t>(s)].cpus, 4);
    EXPECT_EQ(p->slots[static_cast<size_t>(s)].memory_mb, 1500);
  }
  EXPECT_EQ(p->slots[2].cpus, 1);
}

TEST(JobPlanner, MemoryFromTheFileSizeWhenNotGivenAndPinnedSlots) {
  std::vector<ClusterModelSpec> models = {model("a", 3), model("b", 1, 1, 64)};
  models[0].min_replicas = 2;
  auto p = plan(models, {}, 18100, {int64_t{100} << 20, 0});
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->slots[0].memory_mb, 200 + 256);
  EXPECT_EQ(p->slots[3].memory_mb, 64);
  EXPECT_EQ(p->pinned, (std::vector<bool>{true, true, false, false}));
}

TEST(JobPlanner, RefusesBadModelsNamesAndPorts) {
  EXPECT_FALSE(plan({}).is_ok());
  EXPECT_FALSE(plan_jobs({"bad name", std::vector<ClusterModelSpec>{model("a", 1)}, {}, 18100, {}}).is_ok());
  EXPECT_FALSE(plan({model("a b", 1)}).is_ok());
  EXPECT_FALSE(plan({model("a", 1), model("a", 1)}).is_ok());
  EXPECT_FALSE(plan({model("a", 0)}).is_ok());
  EXPECT_FALSE(plan({model("a", 65)}).is_ok());
  auto m = model("a", 2);
  m.min_replicas = 3;
  EXPECT_FALSE(plan({m}).is_ok());
  m.min_replicas = -1;
  EXPECT_FALSE(plan({m}).is_ok());
  EXPECT_FALSE(plan({model("a", 2)}, {}, 65535).is_ok());  // the second port is 65536
  EXPECT_TRUE(plan({model("a", 1)}, {}, 65535).is_ok());
  EXPECT_FALSE(plan({model("a", 1)}, {}, 0).is_ok());
  EXPECT_EQ(plan({model("a", 0)}).status().code(), ErrorCode::kInvalidArgument);
}

TEST(JobPlanner, RefusesBadCoLocatedGroups) {
  const std::vector<ClusterModelSpec> models = {model("a", 2), model("b", 2), model("c", 1), model("d", 2)};
  EXPECT_FALSE(plan(models, {{"a"}}).is_ok());                    // fewer than two
  EXPECT_FALSE(plan(models, {{"a", "zz"}}).is_ok());              // unknown
  EXPECT_FALSE(plan(models, {{"a", "b"}, {"b", "d"}}).is_ok());   // b in two groups
  EXPECT_FALSE(plan(models, {{"a", "c"}}).is_ok());               // unequal max replicas
  EXPECT_FALSE(plan(models, {{"a", "b"}, {"c"}}).is_ok());        // a group of one
  auto ok = plan(models, {{"a", "b", "d"}});
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  EXPECT_EQ(ok->jobs, 3);  // a+b+d x2, c
  EXPECT_EQ(ok->slots[6].job_name, "c-a+b+d-1");
}

}  // namespace job_planner_test
}  // namespace tessera::cluster
