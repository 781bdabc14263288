"""gregor's consumer in group mode: the assignors (run by the elected leader), and (next) the
membership protocol with the group coordinator."""
