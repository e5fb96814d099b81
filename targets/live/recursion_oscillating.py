# Live: recursion whose depth oscillates across data-stack chunk boundaries.
# Each level has 80 locals (about 0.7 KiB of frame), so a 16 KiB chunk holds
# a couple of dozen levels and the depths below spill into new chunks and
# come back.  The descent alternates between two recursive functions, rec_a
# and rec_b, so a stack mixing them is detectably impossible.  Lines carry
# "@tag" comments that recursion_oscillating.decl.json refers to.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

WARMUP = 20                       # rounds before "ready"
DEPTHS = (3, 45, 9, 90, 1, 70, 20, 120, 5, 60)
ZEROS = (0,) * 80


def bottom_a(n):                  # @bottom_a
    total = 0                     # @bottom_a
    for i in range(n):            # @bottom_a
        total += i                # @bottom_a
    return total                  # @bottom_a


def bottom_b(n):                  # @bottom_b
    total = 3                     # @bottom_b
    for i in range(n):            # @bottom_b
        total -= i                # @bottom_b
    return total                  # @bottom_b


def rec_a(n):                     # @rec_a
    v00, v01, v02, v03, v04, v05, v06, v07, v08, v09, v10, v11, v12, v13, v14, v15, v16, v17, v18, v19, v20, v21, v22, v23, v24, v25, v26, v27, v28, v29, v30, v31, v32, v33, v34, v35, v36, v37, v38, v39, v40, v41, v42, v43, v44, v45, v46, v47, v48, v49, v50, v51, v52, v53, v54, v55, v56, v57, v58, v59, v60, v61, v62, v63, v64, v65, v66, v67, v68, v69, v70, v71, v72, v73, v74, v75, v76, v77, v78, v79 = ZEROS  # @rec_a
    if n > 0:                     # @rec_a
        return rec_a(n - 1) + v00  # @rec_a @rec_a-self
    return bottom_a(30) + v79     # @rec_a @rec_a-bottom


def rec_b(n):                     # @rec_b
    v00, v01, v02, v03, v04, v05, v06, v07, v08, v09, v10, v11, v12, v13, v14, v15, v16, v17, v18, v19, v20, v21, v22, v23, v24, v25, v26, v27, v28, v29, v30, v31, v32, v33, v34, v35, v36, v37, v38, v39, v40, v41, v42, v43, v44, v45, v46, v47, v48, v49, v50, v51, v52, v53, v54, v55, v56, v57, v58, v59, v60, v61, v62, v63, v64, v65, v66, v67, v68, v69, v70, v71, v72, v73, v74, v75, v76, v77, v78, v79 = ZEROS  # @rec_b
    if n > 0:                     # @rec_b
        return rec_b(n - 1) + v01  # @rec_b @rec_b-self
    return bottom_b(30) + v78     # @rec_b @rec_b-bottom


def driver(ready, stop):          # @driver
    rounds = 0                    # @driver
    while not stop:               # @driver
        for depth in DEPTHS:      # @driver
            rec_a(depth)          # @driver @driver-a
            rec_b(depth)          # @driver @driver-b
        rounds += 1               # @driver
        if rounds == WARMUP:      # @driver
            ready.append(rounds)  # @driver
    return rounds                 # @driver


ready, stop = fpgt.live("recursion_oscillating")
driver(ready, stop)               # @module-driver
fpgt.done()
