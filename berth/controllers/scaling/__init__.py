"""Scaling policies for elastic jobs: how many workers each one should run.

A policy looks at the elastic jobs (``berth.api.elastic``) and the cluster and returns a
target per job, between its minimum and its maximum; whoever runs it (``berth.sim.scaling``
in the simulator) holds back the workers above a target and takes away the running workers
above it. Two policies, one module each:

- ``edl`` (``berth.controllers.scaling.edl``): PaddlePaddle EDL's autoscaler, which grows the
  least fulfilled job one worker at a time while the cluster's load stays under
  ``maxLoadDesired`` and shrinks the most fulfilled while it is above;
- ``aryl`` (``berth.controllers.scaling.aryl``): Aryl's two phases, the waiting jobs' minimums
  shortest first, then the GPUs left to elastic jobs by a multiple-choice knapsack on the
  completion time each extra worker saves;
- ``elasticflow`` (``berth.controllers.scaling.elasticflow``): ElasticFlow's minimum
  satisfactory shares, earliest deadline first, then the GPUs left by marginal GPU-time saved.
"""

POLICIES = ("edl", "aryl", "elasticflow")
