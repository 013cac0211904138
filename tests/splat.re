BUG:|kernel BUG at|WARNING:|Oops|general protection|refcount_t|unregister_netdevice: waiting|rcu_sched self-detected stall|rcu: INFO|RCU stall|Kernel panic
