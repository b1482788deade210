package service

// DeliveriesDue wakes the Dispatcher as a commit that wrote deliveries
// does.
func (n *Notifier) DeliveriesDue() { n.deliveriesDue() }

// OnDue has f told of each wake of the Dispatcher.
func (n *Notifier) OnDue(f func()) { n.onDue = f }
