# Ported from NORD (2018), https://github.com/GeorgeKyriakides/nord, commit 03cd135,
# nord/architectural_design/metaheuristics/local_genetic_algorithm_local_nets.py.
# Copyright (c) 2018 George Kyriakides; MIT licence, see LICENSE in experiments/legacy/.
# Unchanged: genetic_example.py's `import nord.legacy` provides the 2018 names it imports.
"""
Created on 2018-08-02

@author: George Kyriakides
         ge.kyriakides@gmail.com
"""

# Simple example of finding the parameters for a simple ConvNet.

import pygmo as pg
from .conv_net_size_problem import ConvNetSizeProblem
from utils import get_logger
gens = 10
pop_size = 10

logger = get_logger('Local')


def main(untrained):
    pop = None
    prob = ConvNetSizeProblem(2, untrained=untrained)
    pg.set_global_rng_seed(94874)
    prob = pg.problem(prob)
    algo = pg.algorithm(pg.sga(1, m=0.2, mutation='uniform'))
    pop = pg.population(prob, pop_size)
    algo.set_verbosity(1)
    for g in range(gens):
        f = pop.get_f()
        x = pop.get_x()
        for i in range(len(x)):
            logger.info(str(g)+';'+str(x[i])+';'+str(f[i][0]))
        pop = algo.evolve(pop)
