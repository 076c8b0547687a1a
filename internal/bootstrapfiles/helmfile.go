package bootstrapfiles

func (r *reader) helmfiles() {}
